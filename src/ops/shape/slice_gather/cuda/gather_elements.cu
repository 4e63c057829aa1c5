// GatherElements kernel (gather_elements_kernels.h): one thread per output element, dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/slice_gather/cuda/gather_elements_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/dims_index.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
using namespace dims_index;

template <typename T>
__global__ void gather_elements_kernel(const T* x, Dims xs, const void* idx, bool is64, Dims is, int axis, T* y,
                                       int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t j = load_index(idx, is64, i);
    if (j < 0) j += xs.d[axis];
    if (j < 0 || j >= xs.d[axis]) {
      y[i] = T(0);
      continue;
    }
    y[i] = x[remap_offset(xs, is, i, axis, j)];
  }
}

}  // namespace

int gather_elements(const void* x, const Dims& x_shape, const void* idx, bool idx_is_64, const Dims& idx_shape,
                    int axis, void* y, size_t elem_size, StreamT stream) {
  const int64_t total = numel(idx_shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_GE(S)                                                                                                \
  case S:                                                                                                           \
    gather_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), x_shape, idx, idx_is_64, \
                                                       idx_shape, axis, static_cast<Bytes<S>::T*>(y), total);       \
    break;
    KILNRT_GE(1)
    KILNRT_GE(2) KILNRT_GE(4) KILNRT_GE(8)
#undef KILNRT_GE
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
