// Dropout with its mask output (dropout_mask_kernels.h): y = x (a byte copy) and an all-true mask.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/flatten_dropout/cuda/dropout_mask_kernels.h"

namespace kilnrt::cuda::kernels::dropout {
namespace {

using namespace launch_common;

// ---- Dropout -------------------------------------------------------------------------------------------------------
template <typename T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n) {
  KILNRT_GRID_LOOP(i, n) {
    if (y != x) y[i] = x[i];
    mask[i] = true;
  }
}

}  // namespace

int dropout_identity_mask(const void* x, void* y, size_t elem_size, bool* mask, int64_t n, StreamT stream) {
  if (n <= 0) return 0;
  const unsigned g = blocks_for(n);
  switch (elem_size) {
#define KILNRT_DROPOUT(S)                                                                                              \
  case S:                                                                                                              \
    dropout_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), mask, \
                                               n);                                                                     \
    break;
    KILNRT_DROPOUT(1)
    KILNRT_DROPOUT(2) KILNRT_DROPOUT(4) KILNRT_DROPOUT(8)
#undef KILNRT_DROPOUT
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::dropout
