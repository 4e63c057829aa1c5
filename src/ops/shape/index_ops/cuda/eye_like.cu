// EyeLike kernel (eye_like_kernels.h): one thread per element, dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/index_ops/cuda/eye_like_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void eye_kernel(T* y, int64_t rows, int64_t cols, int64_t k, T one) {
  KILNRT_GRID_LOOP(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : T(0);
  }
}

}  // namespace

int eye_like(void* y, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits, size_t elem_size, StreamT stream) {
  if (rows * cols <= 0) return 0;
  const unsigned g = blocks_for(rows * cols);
  switch (elem_size) {
#define KILNRT_EYE(S)                                                                   \
  case S:                                                                               \
    eye_kernel<<<g, kThreads, 0, stream>>>(static_cast<Bytes<S>::T*>(y), rows, cols, k, \
                                           static_cast<Bytes<S>::T>(one_bits));         \
    break;
    KILNRT_EYE(1)
    KILNRT_EYE(2) KILNRT_EYE(4) KILNRT_EYE(8)
#undef KILNRT_EYE
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
