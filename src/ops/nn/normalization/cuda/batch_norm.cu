// BatchNormalization with parameters on the device (batch_norm_kernels.h): one block per channel, the CPU
// reference's arithmetic (batch statistics in double).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/normalization/cuda/batch_norm_kernels.h"

namespace kilnrt::cuda::kernels::bn {
namespace {

using namespace launch_common;

// ---- BatchNormalization --------------------------------------------------------------------------------------------
__global__ void batch_norm_kernel(BatchNormArgs a) {
  __shared__ double ssum[kThreads], ssq[kThreads];
  __shared__ float sa, sb;
  const int64_t ch = blockIdx.x;
  const int tid = threadIdx.x;
  if (a.training) {
    double s = 0, sq = 0;
    for (int64_t b = 0; b < a.n; ++b) {
      const float* xp = a.x + (b * a.c + ch) * a.size;
      for (int64_t i = tid; i < a.size; i += blockDim.x) {
        const double v = xp[i];
        s += v;
        sq += v * v;
      }
    }
    ssum[tid] = s;
    ssq[tid] = sq;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (tid < w) {
        ssum[tid] += ssum[tid + w];
        ssq[tid] += ssq[tid + w];
      }
      __syncthreads();
    }
  }
  if (tid == 0) {
    float mean_f = 0.f, var_f = 0.f;
    if (a.training) {
      const double cnt = static_cast<double>(a.n * a.size);
      const double m = cnt > 0 ? ssum[0] / cnt : 0.0;
      const double va = cnt > 0 ? fmax(ssq[0] / cnt - m * m, 0.0) : 0.0;
      mean_f = static_cast<float>(m);
      var_f = static_cast<float>(va);
      if (a.running_mean)
        a.running_mean[ch] = static_cast<float>(
            __dadd_rn(__dmul_rn(static_cast<double>(a.mean[ch]), a.momentum), __dmul_rn(m, 1 - a.momentum)));
      if (a.running_var)
        a.running_var[ch] = static_cast<float>(
            __dadd_rn(__dmul_rn(static_cast<double>(a.var[ch]), a.momentum), __dmul_rn(va, 1 - a.momentum)));
    } else {
      mean_f = a.mean[ch];
      var_f = a.var[ch];
    }
    const double inv = 1.0 / sqrt(static_cast<double>(var_f) + a.eps);
    sa = static_cast<float>(__dmul_rn(static_cast<double>(a.scale[ch]), inv));
    const float ms = __fmul_rn(mean_f, a.scale[ch]);
    sb = static_cast<float>(__dsub_rn(static_cast<double>(a.bias[ch]), __dmul_rn(static_cast<double>(ms), inv)));
  }
  __syncthreads();
  const float av = sa, bv = sb;
  for (int64_t b = 0; b < a.n; ++b) {
    const int64_t base = (b * a.c + ch) * a.size;
    for (int64_t i = tid; i < a.size; i += blockDim.x) a.y[base + i] = __fadd_rn(__fmul_rn(a.x[base + i], av), bv);
  }
}

}  // namespace

int batch_norm_f32(const BatchNormArgs& a, StreamT stream) {
  if (a.c <= 0) return 0;
  if (a.c > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  batch_norm_kernel<<<static_cast<unsigned>(a.c), kThreads, 0, stream>>>(a);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::bn
