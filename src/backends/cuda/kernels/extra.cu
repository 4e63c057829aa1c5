// Kernels of the CUDA layers for CPU parity, part 1 (extra_kernels.h; part 2: extra_sample.cu). One kernel per family;
// dtype switches at the entry points.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/extra_kernels.h"
#include "cuda/kernels/dims_index.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::extra {
namespace {

using namespace launch_common;
using dims_index::load_index;


template <typename T>
__global__ void eye_kernel(T* y, int64_t rows, int64_t cols, int64_t k, T one) {
  KILNRT_GRID_LOOP(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : T(0);
  }
}

// One block per (n, group) row.
__global__ void group_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t channels,
                                  int64_t spatial, int64_t groups, bool per_channel, float eps) {
  const int64_t row = blockIdx.x;
  const int64_t cpg = channels / groups, len = cpg * spatial;
  const int64_t g = row % groups;
  const float* p = x + row * len;
  float* q = y + row * len;
  __shared__ float s_sum[kThreads], s_sq[kThreads];
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += p[j];
  s_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
    __syncthreads();
  }
  const float mean = s_sum[0] / float(len);
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float d = p[j] - mean;
    sq += d * d;
  }
  s_sq[threadIdx.x] = sq;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(s_sq[0] / float(len) + eps);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const int64_t ch = g * cpg + j / spatial;
    const int64_t si = per_channel ? ch : g;
    const float a = scale ? scale[si] : 1.f, b = bias ? bias[si] : 0.f;
    q[j] = (p[j] - mean) * inv * a + b;
  }
}

__global__ void lrn_kernel(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha,
                           float beta, float bias) {
  const int lo = (size - 1) / 2, hi = size - 1 - lo;
  KILNRT_GRID_LOOP(i, n * c * spatial) {
    const int64_t s = i % spatial, ch = (i / spatial) % c, b = i / (spatial * c);
    float sum = 0.f;
    for (int64_t cc = ch - lo; cc <= ch + hi; ++cc) {
      if (cc < 0 || cc >= c) continue;
      const float v = x[(b * c + cc) * spatial + s];
      sum += v * v;
    }
    y[i] = x[i] / powf(bias + alpha / float(size) * sum, beta);
  }
}

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

__device__ __forceinline__ float nll_term(const float* logp, const void* target, bool t64, const float* w, int64_t c,
                                          int64_t inner, bool has_ignore, int64_t ignore, int64_t i, float* wt) {
  const int64_t b = i / inner, d = i % inner;
  const int64_t t = load_index(target, t64, i);
  if (has_ignore && t == ignore) { *wt = 0.f; return 0.f; }
  if (t < 0 || t >= c) { *wt = 0.f; return __int_as_float(0x7fc00000); }
  *wt = w ? w[t] : 1.f;
  return -logp[(b * c + t) * inner + d] * *wt;
}

__global__ void nll_none_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                int64_t c, int64_t inner, bool has_ignore, int64_t ignore) {
  KILNRT_GRID_LOOP(i, n * inner) {
    float wt;
    y[i] = nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
  }
}

// One block: the whole reduction (losses are small tensors: batch x spatial).
__global__ void nll_reduce_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                  int64_t c, int64_t inner, bool has_ignore, int64_t ignore, bool mean) {
  __shared__ double s_loss[kThreads], s_w[kThreads];
  double loss = 0.0, wsum = 0.0;
  for (int64_t i = threadIdx.x; i < n * inner; i += blockDim.x) {
    float wt;
    loss += nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
    wsum += wt;
  }
  s_loss[threadIdx.x] = loss;
  s_w[threadIdx.x] = wsum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      s_loss[threadIdx.x] += s_loss[threadIdx.x + s];
      s_w[threadIdx.x] += s_w[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[0] = mean ? float(s_loss[0] / s_w[0]) : float(s_loss[0]);
}

}  // namespace

int eye_like(void* y, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits, size_t elem_size, StreamT stream) {
  if (rows * cols <= 0) return 0;
  const unsigned g = blocks_for(rows * cols);
  switch (elem_size) {
#define KILNRT_EYE(S)                                                                                              \
  case S:                                                                                                          \
    eye_kernel<<<g, kThreads, 0, stream>>>(static_cast<Bytes<S>::T*>(y), rows, cols, k,                            \
                                           static_cast<Bytes<S>::T>(one_bits));                                    \
    break;
    KILNRT_EYE(1) KILNRT_EYE(2) KILNRT_EYE(4) KILNRT_EYE(8)
#undef KILNRT_EYE
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int group_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                   int64_t spatial, int64_t groups, bool per_channel, float eps, StreamT stream) {
  if (n * channels * spatial <= 0) return 0;
  if (groups <= 0 || channels % groups != 0 || n * groups > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  group_norm_kernel<<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, scale, bias, y, channels, spatial,
                                                                               groups, per_channel, eps);
  return launch_status();
}

int lrn_f32(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha, float beta,
            float bias, StreamT stream) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return 0;
  lrn_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, n, c, spatial, size, alpha, beta, bias);
  return launch_status();
}

int nll_loss_f32(const float* logp, const void* target, bool target_is_64, const float* weight, float* y, int64_t n,
                 int64_t c, int64_t inner, bool has_ignore, int64_t ignore_index, int reduction, StreamT stream) {
  if (reduction == 0) {
    if (n * inner <= 0) return 0;
    nll_none_kernel<<<blocks_for(n * inner), kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner,
                                                                    has_ignore, ignore_index);
  } else {
    nll_reduce_kernel<<<1, kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner, has_ignore,
                                                  ignore_index, reduction == 2);
  }
  return launch_status();
}

int conv_transpose2d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT2d& p,
                         StreamT stream) {
  const int64_t total = p.n * p.k * p.oh * p.ow;
  if (total <= 0) return 0;
  conv_transpose2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::extra
