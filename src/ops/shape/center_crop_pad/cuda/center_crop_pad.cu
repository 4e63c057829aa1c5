// The CenterCropPad kernel (center_crop_pad_kernels.h): one thread per output element (grid-stride loop), following the
// CPU reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/center_crop_pad/cuda/center_crop_pad_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- CenterCropPad -------------------------------------------------------------------------------------------------
template <typename T>
__global__ void crop_pad_kernel(const T* x, T* y, CropPad c, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t r = i, src = 0, mul = 1;
    bool inside = true;
    for (int a = c.rank - 1; a >= 0; --a) {
      const int64_t o = r % c.out[a];
      r /= c.out[a];
      const int64_t rel = o - c.dst0[a];
      if (rel < 0 || rel >= c.len[a]) {
        inside = false;
        break;
      }
      src += (c.src0[a] + rel) * mul;
      mul *= c.in[a];
    }
    y[i] = inside ? x[src] : T(0);
  }
}

}  // namespace

int center_crop_pad(const void* x, void* y, size_t elem_size, const CropPad& c, StreamT stream) {
  if (c.rank < 1 || c.rank > kMaxRank) return static_cast<int>(cudaErrorInvalidValue);
  int64_t total = 1;
  for (int a = 0; a < c.rank; ++a) total *= c.out[a];
  if (total <= 0) return 0;
  const unsigned blocks = blocks_for(total);
  switch (elem_size) {
#define KILNRT_CROP_PAD(S)                                                                                             \
  case S:                                                                                                              \
    crop_pad_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), \
                                                     c, total);                                                        \
    break;
    KILNRT_CROP_PAD(1)
    KILNRT_CROP_PAD(2) KILNRT_CROP_PAD(4) KILNRT_CROP_PAD(8)
#undef KILNRT_CROP_PAD
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
