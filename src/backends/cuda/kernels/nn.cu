// Neural-network kernels: reductions, softmax, layer norm, per-channel affine (BatchNormalization), 2-D pooling and
// a direct 2-D convolution (fallback tactic). Correct first: simple one-thread-per-output or one-block-per-row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/layernorm.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

inline unsigned rows_grid(int64_t rows) { return static_cast<unsigned>(rows < 2147483647LL ? rows : 2147483647LL); }

// Storage types: float, __half, __nv_bfloat16; math is always float32 (load -> float -> compute -> store).
__device__ __forceinline__ float ld(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float nan_min(float a, float b) { return (a != a || a < b) ? a : b; }

// Block-wide reduction (sum or max) of one value per thread; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? nan_max(v, other) : v + other;
  }
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int nwarps = (blockDim.x + 31) >> 5;
  float r = threadIdx.x < nwarps ? shared[threadIdx.x] : (kMax ? -INFINITY : 0.f);
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, r, o);
      r = kMax ? nan_max(r, other) : r + other;
    }
    if (lane == 0) shared[0] = r;
  }
  __syncthreads();
  return shared[0];
}

__device__ __forceinline__ float reduce_init(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return -INFINITY;
    case ReduceOp::kMin: return INFINITY;
    case ReduceOp::kProd: return 1.f;
    default: return 0.f;
  }
}
__device__ __forceinline__ float reduce_step(ReduceOp op, float acc, float v) {
  switch (op) {
    case ReduceOp::kMax: return nan_max(acc, v);
    case ReduceOp::kMin: return nan_min(acc, v);
    case ReduceOp::kProd: return acc * v;
    case ReduceOp::kSumSquare: case ReduceOp::kL2: return acc + v * v;
    case ReduceOp::kL1: return acc + fabsf(v);
    case ReduceOp::kLogSumExp: return acc + expf(v);
    default: return acc + v;
  }
}
__device__ __forceinline__ float reduce_final(ReduceOp op, float acc, int64_t r) {
  switch (op) {
    case ReduceOp::kMean: return r > 0 ? acc / float(r) : NAN;
    case ReduceOp::kL2: return sqrtf(acc);
    case ReduceOp::kLogSum: case ReduceOp::kLogSumExp: return logf(acc);
    default: return acc;
  }
}

// inner == 1: one block per output row (coalesced over r).
template <typename T>
__global__ void reduce_rows_kernel(ReduceOp op, const T* x, T* y, int64_t r) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * r;
  const bool is_max = op == ReduceOp::kMax, is_min = op == ReduceOp::kMin, is_prod = op == ReduceOp::kProd;
  float acc = reduce_init(op);
  for (int64_t i = threadIdx.x; i < r; i += blockDim.x) acc = reduce_step(op, acc, ld(row, i));
  float total;
  if (is_max) {
    total = block_reduce<true>(acc, shared);
  } else if (is_min) {
    total = -block_reduce<true>(-acc, shared);
  } else if (is_prod) {  // rare: serialise through shared memory
    __syncthreads();
    if (threadIdx.x == 0) shared[0] = 1.f;
    __syncthreads();
    for (int t = 0; t < blockDim.x; ++t) {
      if (threadIdx.x == t) shared[0] *= acc;
      __syncthreads();
    }
    total = shared[0];
  } else {
    total = block_reduce<false>(acc, shared);
  }
  if (threadIdx.x == 0) st(y, blockIdx.x, reduce_final(op, total, r));
}

// inner > 1: one thread per (outer, inner) output, looping over r (coalesced over inner).
template <typename T>
__global__ void reduce_cols_kernel(ReduceOp op, const T* x, T* y, int64_t outer, int64_t r, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * r * inner + in;
    float acc = reduce_init(op);
    for (int64_t k = 0; k < r; ++k) acc = reduce_step(op, acc, ld(p, k * inner));
    st(y, i, reduce_final(op, acc, r));
  }
}

// float64 storage and math (ONNX's float64 reduction cases): one thread per output, serial over r. LogSumExp
// subtracts the maximum first (no overflow); an empty or all -inf row gives -inf.
__global__ void reduce_f64_kernel(ReduceOp op, const double* x, double* y, int64_t outer, int64_t r, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double* p = x + (i / inner) * r * inner + i % inner;
    double m = -INFINITY;
    if (op == ReduceOp::kLogSumExp)
      for (int64_t k = 0; k < r; ++k) m = (p[k * inner] != p[k * inner] || p[k * inner] > m) ? p[k * inner] : m;
    const bool shift = op == ReduceOp::kLogSumExp && isfinite(m);
    double acc = op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : op == ReduceOp::kProd ? 1.0 : 0.0;
    for (int64_t k = 0; k < r; ++k) {
      const double v = p[k * inner];
      switch (op) {
        case ReduceOp::kMax: acc = (v != v || v > acc) ? v : acc; break;
        case ReduceOp::kMin: acc = (v != v || v < acc) ? v : acc; break;
        case ReduceOp::kProd: acc *= v; break;
        case ReduceOp::kSumSquare: case ReduceOp::kL2: acc += v * v; break;
        case ReduceOp::kL1: acc += fabs(v); break;
        case ReduceOp::kLogSumExp: acc += exp(shift ? v - m : v); break;
        default: acc += v; break;
      }
    }
    switch (op) {
      case ReduceOp::kMean: acc = r > 0 ? acc / double(r) : NAN; break;
      case ReduceOp::kL2: acc = sqrt(acc); break;
      case ReduceOp::kLogSum: acc = log(acc); break;
      case ReduceOp::kLogSumExp: acc = (m != m) ? m : (shift ? m + log(acc) : log(acc)); break;
      default: break;
    }
    y[i] = acc;
  }
}

// A row whose maximum is -inf (every entry masked with -inf) is uniform (1/n), not NaN: masks never produce NaN.
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t n, bool log) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* out = y + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = nan_max(m, ld(row, i));
  m = block_reduce<true>(m, shared);
  const bool all_masked = m == -INFINITY;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += all_masked ? 1.f : expf(ld(row, i) - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.f / s, ls = logf(s);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = all_masked ? 0.f : ld(row, i) - m;
    st(out, i, log ? d - ls : expf(d) * inv);
  }
}

template <typename T>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  const int64_t total = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * n * inner + in;
    T* q = y + o * n * inner + in;
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = nan_max(m, ld(p, k * inner));
    const bool all_masked = m == -INFINITY;
    float s = 0.f;
    for (int64_t k = 0; k < n; ++k) s += all_masked ? 1.f : expf(ld(p, k * inner) - m);
    const float ls = logf(s);
    for (int64_t k = 0; k < n; ++k) {
      const float d = all_masked ? 0.f : ld(p, k * inner) - m;
      st(q, k * inner, log ? d - ls : expf(d) / s);
    }
  }
}

// Mean and variance in float32 from the loaded values (two passes): no 16-bit overflow of sums of squares.
template <typename T>
__global__ void layernorm_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                                 float* inv_std_out, int64_t n, float eps) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* out = y + blockIdx.x * n;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += ld(row, i);
  const float mean = block_reduce<false>(s, shared) / float(n);
  float v = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = ld(row, i) - mean;
    v += d * d;
  }
  const float var = block_reduce<false>(v, shared) / float(n);
  const float inv_std = 1.f / sqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float r = (ld(row, i) - mean) * inv_std;
    if (scale) r *= ld(scale, i);
    if (bias) r += ld(bias, i);
    if (out) st(out, i, r);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_std_out) inv_std_out[blockIdx.x] = inv_std;
  }
}

// Rows of n <= 1024: one warp per row, the row held in registers (one global read), mean and variance from them.
constexpr int kLnWarpMax = 32;  // values per lane
template <typename T>
__global__ void layernorm_warp_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                                      float* inv_std_out, int64_t rows, int n, float eps) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = threadIdx.x & 31;
  const T* row = x + r * n;
  float v[kLnWarpMax];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const int c = lane + i * 32;
    v[i] = c < n ? ld(row, c) : 0.f;
    s += v[i];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float mean = s / float(n);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const float d = lane + i * 32 < n ? v[i] - mean : 0.f;
    q += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  const float inv_std = 1.f / sqrtf(q / float(n) + eps);
  T* out = y ? y + r * n : nullptr;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const int c = lane + i * 32;
    if (c < n && out) {
      float t = (v[i] - mean) * inv_std;
      if (scale) t *= ld(scale, c);
      if (bias) t += ld(bias, c);
      st(out, c, t);
    }
  }
  if (lane == 0) {
    if (mean_out) mean_out[r] = mean;
    if (inv_std_out) inv_std_out[r] = inv_std;
  }
}

template <typename T>
__global__ void channel_affine_kernel(const T* x, const float* a, const float* b, T* y, int64_t outer,
                                      int64_t c, int64_t inner) {
  const int64_t n = outer * c * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / inner) % c;
    st(y, i, ld(x, i) * a[ch] + b[ch]);
  }
}

template <typename T>
__global__ void pool2d_kernel(const T* x, T* y, Pool2d p) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const T* plane = x + nc * p.h * p.w;
    float acc = p.max ? -INFINITY : 0.f;
    int count = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
        const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
        if (p.max) {
          if (inside) acc = nan_max(acc, ld(plane, iy * p.w + ix));
        } else {
          // count_include_pad counts padding positions inside the padded input, not the ceil_mode overhang.
          const bool in_padded = iy < p.h + p.ph && ix < p.w + p.pw;
          if (inside) acc += ld(plane, iy * p.w + ix);
          if (inside || (p.count_include_pad && in_padded)) ++count;
        }
      }
    }
    st(y, i, p.max ? acc : (count > 0 ? acc / float(count) : 0.f));
  }
}

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

// dt: 0 float32, 1 float16, 2 bfloat16 (the only dtype switch; one instantiation per storage type).
#define KILNRT_DT_SWITCH(dt, ...)                                    \
  switch (dt) {                                                      \
    case 0: { using T = float; __VA_ARGS__; break; }                 \
    case 1: { using T = __half; __VA_ARGS__; break; }                \
    case 2: { using T = __nv_bfloat16; __VA_ARGS__; break; }         \
    default: return static_cast<int>(cudaErrorInvalidValue);         \
  }

int reduce(ReduceOp op, int dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner, StreamT stream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (outer * inner == 0) return 0;
  const bool rows = inner == 1 && outer < 2147483647LL;
  KILNRT_DT_SWITCH(dt, if (rows) reduce_rows_kernel<T><<<rows_grid(outer), kThreads, 0, s>>>(op, (const T*)x, (T*)y, r);
                   else reduce_cols_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(op, (const T*)x, (T*)y,
                                                                                              outer, r, inner))
  return launch_status();
}
int reduce_f64(ReduceOp op, const double* x, double* y, int64_t outer, int64_t r, int64_t inner, StreamT stream) {
  if (outer * inner == 0) return 0;
  reduce_f64_kernel<<<blocks_for(outer * inner), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(op, x, y, outer,
                                                                                                      r, inner);
  return launch_status();
}

int softmax(int dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (outer * n * inner == 0) return 0;
  const bool rows = inner == 1 && outer < 2147483647LL;
  KILNRT_DT_SWITCH(dt, if (rows) softmax_rows_kernel<T><<<rows_grid(outer), n >= 1024 ? 512 : 128, 0, s>>>(
                           (const T*)x, (T*)y, n, log);
                   else softmax_cols_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>((const T*)x, (T*)y,
                                                                                              outer, n, inner, log))
  return launch_status();
}
int softmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream) {
  return softmax(0, x, y, outer, n, inner, log, stream);
}

int layernorm(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
              int64_t rows, int64_t n, float eps, StreamT stream) {
  if (rows == 0 || n == 0) return 0;
  if (rows >= 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  // 16-byte vectors, a group of lanes per row (layernorm.cu) when n and the pointers allow it; else the kernels below.
  const int vec = layernorm_vec(dt, x, scale, bias, y, mean, inv_std, rows, n, eps, stream);
  if (vec >= 0) return vec;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (n <= 32 * kLnWarpMax) {  // one warp per row, 8 rows per block
    const int64_t blocks = (rows + 7) / 8;
    if (blocks >= 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
    KILNRT_DT_SWITCH(dt, layernorm_warp_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, s>>>(
                             (const T*)x, (const T*)scale, (const T*)bias, (T*)y, mean, inv_std, rows,
                             static_cast<int>(n), eps))
    return launch_status();
  }
  KILNRT_DT_SWITCH(dt, layernorm_kernel<T><<<rows_grid(rows), n >= 1024 ? 512 : 128, 0, s>>>(
                           (const T*)x, (const T*)scale, (const T*)bias, (T*)y, mean, inv_std, n, eps))
  return launch_status();
}

int channel_affine(int dt, const void* x, const float* a, const float* b, void* y, int64_t outer, int64_t c,
                   int64_t inner, StreamT stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  KILNRT_DT_SWITCH(dt, channel_affine_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((const T*)x, a, b, (T*)y, outer, c,
                                                                                   inner))
  return launch_status();
}

int pool2d(int dt, const void* x, void* y, const Pool2d& p, StreamT stream) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  KILNRT_DT_SWITCH(dt, pool2d_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((const T*)x, (T*)y, p))
  return launch_status();
}

int conv2d_direct_f32(const float* x, const float* w, const float* bias, float* y, const Conv2d& p, StreamT stream) {
  const int64_t n = p.n * p.k * p.oh * p.ow;
  if (n == 0) return 0;
  conv2d_direct_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
