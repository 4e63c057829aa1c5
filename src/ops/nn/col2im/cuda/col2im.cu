// The Col2Im kernel (col2im_kernels.h): one thread per output element (grid-stride loop), following the CPU reference's
// order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/col2im/cuda/col2im_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- Col2Im --------------------------------------------------------------------------------------------------------
__global__ void col2im_kernel(const float* x, float* y, Col2ImGeom g, int64_t image_size, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t plane = i / image_size;  // n * channels + c
    int64_t pix[kMaxRank];
    for (int64_t d = g.nd - 1, r = i % image_size; d >= 0; --d) {
      pix[d] = r % g.image[d];
      r /= g.image[d];
    }
    const float* col = x + plane * g.k_size * g.l_size;
    float acc = 0.f;
    for (int64_t k = 0; k < g.k_size; ++k) {
      int64_t kr = k, l = 0, lmul = 1;
      bool hit = true;
      for (int d = g.nd - 1; d >= 0; --d) {
        const int64_t kd = kr % g.block[d];
        kr /= g.block[d];
        const int64_t t = pix[d] + g.pad[d] - kd * g.dil[d];  // = block position * stride
        if (t < 0 || t % g.stride[d] != 0 || t / g.stride[d] >= g.blocks[d]) {
          hit = false;
          break;
        }
        l += (t / g.stride[d]) * lmul;
        lmul *= g.blocks[d];
      }
      if (hit) acc += col[k * g.l_size + l];
    }
    y[i] = acc;
  }
}

}  // namespace

int col2im(const float* x, float* y, const Col2ImGeom& g, StreamT stream) {
  if (g.nd < 1 || g.nd > kMaxRank) return static_cast<int>(cudaErrorInvalidValue);
  int64_t image_size = 1;
  for (int d = 0; d < g.nd; ++d) image_size *= g.image[d];
  const int64_t total = g.batch * g.channels * image_size;
  if (total <= 0) return 0;
  col2im_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, g, image_size, total);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
