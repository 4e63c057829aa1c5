// The TensorScatter kernel (tensor_scatter_kernels.h): one thread per output element (grid-stride loop), following the
// CPU reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/tensor_scatter/cuda/tensor_scatter_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- TensorScatter -------------------------------------------------------------------------------------------------
template <typename T>
__global__ void tensor_scatter_kernel(const T* cache, const T* update, const int64_t* write_indices, T* y,
                                      ScatterGeom g, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t in = i % g.inner;
    int64_t r = i / g.inner;
    const int64_t pos = r % g.max_len;
    r /= g.max_len;  // b * prefix + p
    const int64_t b = r / g.prefix;
    const int64_t start = write_indices ? write_indices[b] : 0;
    int64_t s = pos - start;
    if (g.circular) s = ((s % g.max_len) + g.max_len) % g.max_len;
    y[i] = s >= 0 && s < g.len ? update[(r * g.len + s) * g.inner + in] : cache[i];
  }
}

}  // namespace

int tensor_scatter(const void* cache, const void* update, const int64_t* write_indices, void* y, size_t elem_size,
                   const ScatterGeom& g, StreamT stream) {
  const int64_t total = g.batch * g.prefix * g.max_len * g.inner;
  if (total <= 0) return 0;
  const unsigned blocks = blocks_for(total);
  switch (elem_size) {
#define KILNRT_SCATTER(S)                                                                                          \
  case S:                                                                                                          \
    tensor_scatter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(cache),                 \
                                                           static_cast<const Bytes<S>::T*>(update), write_indices, \
                                                           static_cast<Bytes<S>::T*>(y), g, total);                \
    break;
    KILNRT_SCATTER(1)
    KILNRT_SCATTER(2) KILNRT_SCATTER(4) KILNRT_SCATTER(8)
#undef KILNRT_SCATTER
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
