// 3-D ConvTranspose (conv_transpose3d_kernels.h): one thread per output element, the contributions of its taps
// gathered (no atomics). Mirrors the CPU reference (src/ops/nn/conv_transpose/conv_transpose.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/conv_transpose/cuda/conv_transpose3d_kernels.h"

namespace kilnrt::cuda::kernels::vol {
namespace {

using namespace launch_common;

__global__ void conv_transpose3d_kernel(const float* x, const float* w, const float* bias, float* y, ConvT3 p) {
  const int64_t cpg = p.c / p.groups, kpg = p.k / p.groups;
  const int64_t out_size = p.out[0] * p.out[1] * p.out[2], in_size = p.in[0] * p.in[1] * p.in[2];
  const int64_t kern_size = p.kern[0] * p.kern[1] * p.kern[2];
  KILNRT_GRID_LOOP(i, p.n * p.k * out_size) {
    const int64_t r = i % out_size, ko = (i / out_size) % p.k, b = i / (out_size * p.k);
    const int64_t o[3] = {r / (p.out[2] * p.out[1]), (r / p.out[2]) % p.out[1], r % p.out[2]};
    const int64_t g = ko / kpg, kk = ko % kpg;
    float acc = bias ? bias[ko] : 0.f;
    for (int64_t k0 = 0; k0 < p.kern[0]; ++k0) {
      const int64_t t0 = o[0] + p.pad_begin[0] - k0 * p.d[0];
      if (t0 < 0 || t0 % p.s[0]) continue;
      const int64_t i0 = t0 / p.s[0];
      if (i0 >= p.in[0]) continue;
      for (int64_t k1 = 0; k1 < p.kern[1]; ++k1) {
        const int64_t t1 = o[1] + p.pad_begin[1] - k1 * p.d[1];
        if (t1 < 0 || t1 % p.s[1]) continue;
        const int64_t i1 = t1 / p.s[1];
        if (i1 >= p.in[1]) continue;
        for (int64_t k2 = 0; k2 < p.kern[2]; ++k2) {
          const int64_t t2 = o[2] + p.pad_begin[2] - k2 * p.d[2];
          if (t2 < 0 || t2 % p.s[2]) continue;
          const int64_t i2 = t2 / p.s[2];
          if (i2 >= p.in[2]) continue;
          const int64_t xoff = (i0 * p.in[1] + i1) * p.in[2] + i2;
          const int64_t woff = (k0 * p.kern[1] + k1) * p.kern[2] + k2;
          for (int64_t ci = 0; ci < cpg; ++ci) {
            const int64_t c = g * cpg + ci;
            acc += x[(b * p.c + c) * in_size + xoff] * w[(c * kpg + kk) * kern_size + woff];
          }
        }
      }
    }
    y[i] = acc;
  }
}

}  // namespace

int conv_transpose3d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT3& p, StreamT stream) {
  const int64_t total = p.n * p.k * p.out[0] * p.out[1] * p.out[2];
  if (total <= 0) return 0;
  if (p.groups <= 0 || p.c % p.groups || p.k % p.groups) return static_cast<int>(cudaErrorInvalidValue);
  conv_transpose3d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::vol
