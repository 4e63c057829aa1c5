// Pad / Tile kernel (pad_kernels.h): one thread per output element maps back to its input element (constant,
// reflect, edge, wrap), dispatched on the element size.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/pad_tile/cuda/pad_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void pad_kernel(const T* x, T* y, PadPlan p, int64_t total, T value) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t rem = i, off = 0, stride = 1;
    bool outside = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t n = p.in_dims[d];
      int64_t c = rem % p.out_dims[d] - p.begin[d];
      rem /= p.out_dims[d];
      if (c < 0 || c >= n) {
        switch (p.mode) {
          case 0: outside = true; break;
          case 1:
            if (n == 1) {
              c = 0;
              break;
            }
            while (c < 0 || c >= n) c = c < 0 ? -c : 2 * (n - 1) - c;
            break;
          case 2: c = c < 0 ? 0 : n - 1; break;
          default: c = ((c % n) + n) % n; break;
        }
      }
      off += c * stride;
      stride *= n;
    }
    y[i] = outside ? value : x[off];
  }
}

}  // namespace

int pad(const void* x, void* y, const PadPlan& p, size_t elem_size, StreamT stream) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.out_dims[d];
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_PAD(S)                                                                                                  \
  case S:                                                                                                              \
    pad_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), p, total, \
                                           static_cast<Bytes<S>::T>(p.value_bits));                                    \
    break;
    KILNRT_PAD(1)
    KILNRT_PAD(2) KILNRT_PAD(4) KILNRT_PAD(8)
#undef KILNRT_PAD
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
