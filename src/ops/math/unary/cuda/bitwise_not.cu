// BitwiseNot kernel (bitwise_not_kernels.h): one thread per element, dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/math/unary/cuda/bitwise_not_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <class T>
__global__ void bit_not_kernel(const T* a, T* y, int64_t n) {
  KILNRT_GRID_LOOP(i, n) y[i] = T(~a[i]);
}

}  // namespace

int bit_not(const void* a, void* y, int64_t n, size_t elem_size, StreamT stream) {
  if (n <= 0) return 0;
  const unsigned g = blocks_for(n);
  switch (elem_size) {
#define KILNRT_BITS_NOT(S)                                                                                           \
  case S:                                                                                                            \
    bit_not_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(a), static_cast<Bytes<S>::T*>(y), n); \
    break;
    KILNRT_BITS_NOT(1)
    KILNRT_BITS_NOT(2) KILNRT_BITS_NOT(4) KILNRT_BITS_NOT(8)
#undef KILNRT_BITS_NOT
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
