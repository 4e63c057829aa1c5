// Trilu kernel (trilu_kernels.h): one thread per element, dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/pad_tile/cuda/trilu_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void trilu_kernel(const T* x, T* y, const int64_t* k_dev, int64_t total, int64_t rows, int64_t cols,
                             bool upper) {
  const int64_t k = k_dev ? *k_dev : 0;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? (c - r >= k) : (c - r <= k);
    y[i] = keep ? x[i] : T(0);
  }
}

}  // namespace

int trilu(const void* x, void* y, const int64_t* k_dev, int64_t batch, int64_t rows, int64_t cols, bool upper,
          size_t elem_size, StreamT stream) {
  const int64_t total = batch * rows * cols;
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_TRILU(S)                                                                                               \
  case S:                                                                                                             \
    trilu_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), k_dev, \
                                             total, rows, cols, upper);                                               \
    break;
    KILNRT_TRILU(1)
    KILNRT_TRILU(2) KILNRT_TRILU(4) KILNRT_TRILU(8)
#undef KILNRT_TRILU
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
