// Direct 2-D convolution over NCHW (conv2d_direct_kernels.h): one thread per output element, float32. The fallback
// when cuDNN is missing, and the reference tactic of the tests.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/conv/cuda/conv2d_direct_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void conv2d_direct_kernel(const float* x, const float* w, const float* bias, float* y, Conv2d p) {
  const int64_t n = p.n * p.k * p.oh * p.ow;
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, k = (i / (p.ow * p.oh)) % p.k, b = i / (p.ow * p.oh * p.k);
    const int64_t g = k / kg;
    float acc = bias ? bias[k] : 0.f;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* plane = x + ((b * p.c) + g * cg + ci) * p.h * p.w;
      const float* wk = w + ((k * cg) + ci) * p.kh * p.kw;
      for (int ky = 0; ky < p.kh; ++ky) {
        const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
        if (iy < 0 || iy >= p.h) continue;
        for (int kx = 0; kx < p.kw; ++kx) {
          const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
          if (ix < 0 || ix >= p.w) continue;
          acc = fmaf(plane[iy * p.w + ix], wk[ky * p.kw + kx], acc);
        }
      }
    }
    y[i] = acc;
  }
}

}  // namespace

int conv2d_direct_f32(const float* x, const float* w, const float* bias, float* y, const Conv2d& p, StreamT stream) {
  const int64_t n = p.n * p.k * p.oh * p.ow;
  if (n == 0) return 0;
  conv2d_direct_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
