// Direct 2-D ConvTranspose kernel of float32 (conv_transpose2d_kernels.h): one thread per output element gathers its
// contributing input pixels.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/conv_transpose/cuda/conv_transpose2d_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void conv_transpose2d_kernel(const float* x, const float* w, const float* bias, float* y, ConvT2d p) {
  const int64_t cpg = p.c / p.groups, kpg = p.k / p.groups;
  KILNRT_GRID_LOOP(i, p.n * p.k * p.oh * p.ow) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, ko = (i / (p.ow * p.oh)) % p.k, b = i / (p.ow * p.oh * p.k);
    const int64_t g = ko / kpg, kk = ko % kpg;
    float acc = bias ? bias[ko] : 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t ty = oy + p.ph - int64_t(ky) * p.dh;
      if (ty < 0 || ty % p.sh) continue;
      const int64_t iy = ty / p.sh;
      if (iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t tx = ox + p.pw - int64_t(kx) * p.dw;
        if (tx < 0 || tx % p.sw) continue;
        const int64_t ix = tx / p.sw;
        if (ix >= p.w) continue;
        for (int64_t ci = 0; ci < cpg; ++ci) {
          const int64_t c = g * cpg + ci;
          acc += x[((b * p.c + c) * p.h + iy) * p.w + ix] * w[((c * kpg + kk) * p.kh + ky) * p.kw + kx];
        }
      }
    }
    y[i] = acc;
  }
}

}  // namespace

int conv_transpose2d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT2d& p,
                         StreamT stream) {
  const int64_t total = p.n * p.k * p.oh * p.ow;
  if (total <= 0) return 0;
  conv_transpose2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
