// Kernels of misc_gaps.h: the preview.training optimizers, BatchNormalization with device parameters, MaxPool with
// Indices / on 8-bit integers, Dropout's mask. Each follows its CPU reference's arithmetic (order of operations and
// the float / double roundings), so that results match it to the last bit or nearly.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/misc_gaps.h"

namespace kilnrt::cuda::kernels::gaps {
namespace {

using namespace launch_common;

// ---- optimizers --------------------------------------------------------------------------------------------------
__device__ __forceinline__ double load_r(const OptScalars& s) {
  return s.r_f64 ? *static_cast<const double*>(s.r) : static_cast<double>(*static_cast<const float*>(s.r));
}

template <typename T>
__global__ void adagrad_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s), step = static_cast<double>(*s.t);
  const double lr = r / (1 + step * a.decay);
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* h = static_cast<const T*>(t.s1);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double hn = static_cast<double>(h[i]) + gr * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>(xv - lr * gr / (sqrt(hn) + a.eps));
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(hn);
  }
}

template <typename T>
__global__ void momentum_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s);
  const double b = *s.t > 0 ? a.beta : 1.0;
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* v = static_cast<const T*>(t.s1);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double vn = a.alpha * static_cast<double>(v[i]) + b * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>(a.nesterov ? xv - r * (gr + a.alpha * vn) : xv - r * vn);
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(vn);
  }
}

template <typename T>
__global__ void adam_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s);
  const int64_t step = *s.t;
  const double td = static_cast<double>(step);
  const double lr = step > 0 ? r * sqrt(1 - pow(a.beta, td)) / (1 - pow(a.alpha, td)) : r;
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* v = static_cast<const T*>(t.s1);
  const T* h = static_cast<const T*>(t.s2);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double vn = a.alpha * static_cast<double>(v[i]) + (1 - a.alpha) * gr;
    const double hn = a.beta * static_cast<double>(h[i]) + (1 - a.beta) * gr * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>((1 - a.norm_post) * (xv - lr * vn / (sqrt(hn) + a.eps)));
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(vn);
    if (t.s2_out) static_cast<T*>(t.s2_out)[i] = static_cast<T>(hn);
  }
}

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

// ---- MaxPool -------------------------------------------------------------------------------------------------------
__device__ __forceinline__ float load_pool(const void* x, int dt, int64_t i) {
  if (dt == 1) return static_cast<float>(static_cast<const int8_t*>(x)[i]);
  if (dt == 2) return static_cast<float>(static_cast<const uint8_t*>(x)[i]);
  return static_cast<const float*>(x)[i];
}

__global__ void max_pool3_kernel(int dt, const void* x, void* y, int64_t* indices, bool column_major, Pool3 p) {
  const int64_t in_size = p.in[0] * p.in[1] * p.in[2], out_size = p.out[0] * p.out[1] * p.out[2];
  KILNRT_GRID_LOOP(e, p.planes * out_size) {
    const int64_t plane = e / out_size, o = e % out_size;
    const int64_t ow = o % p.out[2], oh = (o / p.out[2]) % p.out[1], od = o / (p.out[2] * p.out[1]);
    float best = -INFINITY;
    int64_t best_index = -1, best_col = 0;
    for (int64_t kd = 0; kd < p.k[0]; ++kd) {
      const int64_t id = od * p.s[0] - p.pad[0] + kd * p.d[0];
      if (id < 0 || id >= p.in[0]) continue;
      for (int64_t kh = 0; kh < p.k[1]; ++kh) {
        const int64_t ih = oh * p.s[1] - p.pad[1] + kh * p.d[1];
        if (ih < 0 || ih >= p.in[1]) continue;
        const int64_t row = (id * p.in[1] + ih) * p.in[2];
        for (int64_t kw = 0; kw < p.k[2]; ++kw) {
          const int64_t iw = ow * p.s[2] - p.pad[2] + kw * p.d[2];
          if (iw < 0 || iw >= p.in[2]) continue;
          const float v = load_pool(x, dt, plane * in_size + row + iw);
          if (v > best || best_index < 0 || (v != v && best == best)) {  // NaN propagates, as on the CPU
            best = v;
            best_index = row + iw;
            best_col = id + p.in[0] * (ih + p.in[1] * iw);
          }
        }
      }
    }
    if (dt == 0) {
      static_cast<float*>(y)[e] = best;
    } else {
      const float lo = dt == 1 ? -128.f : 0.f, hi = dt == 1 ? 127.f : 255.f;
      const float v = fminf(hi, fmaxf(lo, best));
      if (dt == 1) static_cast<int8_t*>(y)[e] = static_cast<int8_t>(v);
      else static_cast<uint8_t*>(y)[e] = static_cast<uint8_t>(v);
    }
    if (indices) indices[e] = best_index < 0 ? 0 : plane * in_size + (column_major ? best_col : best_index);
  }
}

// ---- Dropout -------------------------------------------------------------------------------------------------------
template <typename T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n) {
  KILNRT_GRID_LOOP(i, n) {
    if (y != x) y[i] = x[i];
    mask[i] = true;
  }
}

}  // namespace

int adagrad(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64) adagrad_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else adagrad_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

int momentum(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64) momentum_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else momentum_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

int adam(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64) adam_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else adam_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

int batch_norm_f32(const BatchNormArgs& a, StreamT stream) {
  if (a.c <= 0) return 0;
  if (a.c > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  batch_norm_kernel<<<static_cast<unsigned>(a.c), kThreads, 0, stream>>>(a);
  return launch_status();
}

int max_pool3(int dt, const void* x, void* y, int64_t* indices, bool column_major, const Pool3& p, StreamT stream) {
  if (dt < 0 || dt > 2) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t total = p.planes * p.out[0] * p.out[1] * p.out[2];
  if (total <= 0) return 0;
  max_pool3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dt, x, y, indices, column_major, p);
  return launch_status();
}

int dropout_identity_mask(const void* x, void* y, size_t elem_size, bool* mask, int64_t n, StreamT stream) {
  if (n <= 0) return 0;
  const unsigned g = blocks_for(n);
  switch (elem_size) {
#define KILNRT_DROPOUT(S)                                                                                    \
  case S:                                                                                                    \
    dropout_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), \
                                                mask, n);                                                    \
    break;
    KILNRT_DROPOUT(1) KILNRT_DROPOUT(2) KILNRT_DROPOUT(4) KILNRT_DROPOUT(8)
#undef KILNRT_DROPOUT
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::gaps
