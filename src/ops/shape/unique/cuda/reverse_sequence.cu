// ReverseSequence kernel (reverse_sequence_kernels.h): one thread per element, dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/unique/cuda/reverse_sequence_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void reverse_sequence_kernel(const T* x, const int64_t* lens, T* y, int64_t d0, int64_t d1, int64_t inner,
                                        bool time_first) {
  KILNRT_GRID_LOOP(i, d0 * d1 * inner) {
    const int64_t e = i % inner, i1 = (i / inner) % d1, i0 = i / (inner * d1);
    const int64_t t = time_first ? i0 : i1, b = time_first ? i1 : i0, tlen = time_first ? d0 : d1;
    int64_t len = lens[b];
    len = len < tlen ? len : tlen;
    const int64_t st = t < len ? len - 1 - t : t;
    const int64_t j0 = time_first ? st : i0, j1 = time_first ? i1 : st;
    y[i] = x[(j0 * d1 + j1) * inner + e];
  }
}

}  // namespace

int reverse_sequence(const void* x, const int64_t* lens, void* y, int64_t d0, int64_t d1, int64_t inner,
                     bool time_first, size_t elem_size, StreamT stream) {
  const int64_t total = d0 * d1 * inner;
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_REV(S)                                                                                             \
  case S:                                                                                                         \
    reverse_sequence_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), lens,                 \
                                                        static_cast<Bytes<S>::T*>(y), d0, d1, inner, time_first); \
    break;
    KILNRT_REV(1)
    KILNRT_REV(2) KILNRT_REV(4) KILNRT_REV(8)
#undef KILNRT_REV
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
