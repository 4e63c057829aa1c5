// Kernels of linatt.h: LinearAttention, CausalConvWithState, RMSNormalization, LpNormalization and CumProd, each in
// its CPU reference's arithmetic (double accumulation in the reference's order, the same float roundings), so that
// results match it to the last bit or nearly (FMA contraction and the device exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/linatt.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- LinearAttention: one thread per (pair, state column m); column m of the state only ever meets column m -------
__global__ void linear_attention_kernel(LinearAttentionArgs a, int64_t pair_begin, int64_t pairs) {
  const int64_t dk = a.dk, dv = a.dv, group = a.hq / a.hkv;
  KILNRT_GRID_LOOP(i, pairs * dv) {
    const int64_t local = i / dv, m = i % dv;
    const int64_t pair = pair_begin + local;
    const int64_t b = pair / a.hkv, h = pair % a.hkv;
    double* s = a.state + local * dk * dv + m;  // s[d * dv] is state[d][m]
    for (int64_t d = 0; d < dk; ++d) s[d * dv] = a.past ? static_cast<double>(a.past[(pair * dk + d) * dv + m]) : 0.0;
    for (int64_t t = 0; t < a.steps; ++t) {
      const int64_t bt_row = b * a.steps + t;
      const float* kt = a.k + bt_row * a.hkv * dk + h * dk;
      double vt = a.v[bt_row * a.hkv * dv + h * dv + m];
      if (a.decay) {
        const float* g = a.decay + bt_row * a.decay_last;
        for (int64_t d = 0; d < dk; ++d) {
          const double f = exp(static_cast<double>(a.decay_last == a.hkv ? g[h] : g[h * dk + d]));
          s[d * dv] *= f;
        }
      }
      if (a.beta) {
        const double beta = a.beta[bt_row * a.beta_last + (a.beta_last == 1 ? 0 : h)];
        double r = 0.0;
        for (int64_t d = 0; d < dk; ++d) r += s[d * dv] * kt[d];
        vt = beta * (vt - r);
      }
      for (int64_t d = 0; d < dk; ++d) s[d * dv] += kt[d] * vt;
      for (int64_t j = 0; j < group; ++j) {
        const int64_t qh = h * group + j;
        const float* qt = a.q + bt_row * a.hq * dk + qh * dk;
        double acc = 0.0;
        for (int64_t d = 0; d < dk; ++d) acc += qt[d] * s[d * dv];
        a.y[bt_row * a.hq * dv + qh * dv + m] = static_cast<float>(a.scale * acc);
      }
    }
    if (a.present)
      for (int64_t d = 0; d < dk; ++d) a.present[(pair * dk + d) * dv + m] = static_cast<float>(s[d * dv]);
  }
}

// ---- CausalConvWithState ----------------------------------------------------------------------------------------------
// padded[b, c, i] = past (or 0) for i < K-1, else x[b, c, i - (K-1)].
__device__ __forceinline__ double padded_at(const CausalConvArgs& a, int64_t row, int64_t i) {
  const int64_t state = a.kernel - 1;
  if (i < state) return a.past ? static_cast<double>(a.past[row * state + i]) : 0.0;
  return a.x[row * a.length + (i - state)];
}

__global__ void causal_conv_kernel(CausalConvArgs a, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t row = i / a.length, t = i % a.length, c = row % a.channels;
    const float* wc = a.w + c * a.kernel;
    double acc = a.bias ? static_cast<double>(a.bias[c]) : 0.0;
    for (int64_t j = 0; j < a.kernel; ++j) acc += wc[j] * padded_at(a, row, t + j);
    if (a.silu) acc = acc / (1.0 + exp(-acc));
    a.y[i] = static_cast<float>(acc);
  }
}

__global__ void causal_conv_state_kernel(CausalConvArgs a, int64_t total) {
  const int64_t state = a.kernel - 1, plen = state + a.length;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t row = i / state, t = i % state;
    a.present[i] = static_cast<float>(padded_at(a, row, plen - state + t));
  }
}

// ---- RMSNormalization: one block per row, double sum of squares --------------------------------------------------------
constexpr int kNormThreads = 256;

__device__ double block_sum(double v, double* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const double total = shared[0];
  __syncthreads();
  return total;
}

__device__ __forceinline__ int64_t scale_offset(const RmsNormArgs& a, int64_t i) {
  int64_t off = 0;
  for (int d = a.norm_rank - 1; d >= 0; --d) {
    off += (i % a.norm_dims[d]) * a.scale_strides[d];
    i /= a.norm_dims[d];
  }
  return off;
}

__global__ void rms_norm_kernel(RmsNormArgs a) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const float* xs = a.x + r * a.len;
    float* ys = a.y + r * a.len;
    double sq = 0.0;
    for (int64_t i = threadIdx.x; i < a.len; i += blockDim.x) sq += static_cast<double>(xs[i]) * xs[i];
    sq = block_sum(sq, shared);
    const double inv = 1.0 / sqrt((a.len > 0 ? sq / static_cast<double>(a.len) : 0.0) + a.eps);
    for (int64_t i = threadIdx.x; i < a.len; i += blockDim.x)
      ys[i] = static_cast<float>(xs[i] * inv * a.scale[scale_offset(a, i)]);
  }
}

// ---- LpNormalization: one thread per (outer, inner) line -------------------------------------------------------------
__global__ void lp_norm_kernel(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p) {
  KILNRT_GRID_LOOP(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const int64_t base = o * dim * inner + i;
    double acc = 0.0;
    for (int64_t k = 0; k < dim; ++k) {
      const double v = x[base + k * inner];
      acc += p == 1 ? fabs(v) : v * v;
    }
    const double norm = p == 1 ? acc : sqrt(acc);
    for (int64_t k = 0; k < dim; ++k)
      y[base + k * inner] = norm == 0.0 ? 0.0f : static_cast<float>(x[base + k * inner] / norm);
  }
}

// ---- CumProd: one thread per line along the axis -----------------------------------------------------------------------
struct CumDims {
  int rank = 0;
  int64_t d[kMaxNormDims] = {};
};

template <typename T>
__device__ __forceinline__ T mul_wrap(T acc, T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
  else
    return acc * v;
}

// T: storage, A: accumulator (double for floats, int64 for integers, as the CPU reference).
template <typename T, typename A>
__global__ void cumprod_kernel(const T* x, T* y, const void* axis_dev, bool axis_is_64, CumDims s, bool exclusive,
                               bool reverse) {
  int64_t axis = axis_is_64 ? *static_cast<const int64_t*>(axis_dev) : *static_cast<const int32_t*>(axis_dev);
  if (axis < 0) axis += s.rank;
  if (axis < 0 || axis >= s.rank) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s.d[d];
  for (int d = static_cast<int>(axis) + 1; d < s.rank; ++d) inner *= s.d[d];
  const int64_t dim = s.d[axis];
  KILNRT_GRID_LOOP(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const int64_t base = o * dim * inner + i;
    A acc = A(1);
    for (int64_t st = 0; st < dim; ++st) {
      const int64_t k = reverse ? dim - 1 - st : st;
      const int64_t off = base + k * inner;
      const A val = static_cast<A>(x[off]);
      if (exclusive) {
        y[off] = static_cast<T>(acc);
        acc = mul_wrap<A>(acc, val);
      } else {
        acc = mul_wrap<A>(acc, val);
        y[off] = static_cast<T>(acc);
      }
    }
  }
}

}  // namespace

int linear_attention(const LinearAttentionArgs& a, int64_t pair_begin, int64_t pair_end, StreamT stream) {
  const int64_t pairs = pair_end - pair_begin;
  if (pairs <= 0 || a.dv <= 0 || a.hkv <= 0 || a.hq % a.hkv != 0) return 0;
  linear_attention_kernel<<<blocks_for(pairs * a.dv), kThreads, 0, stream>>>(a, pair_begin, pairs);
  return launch_status();
}

int causal_conv(const CausalConvArgs& a, StreamT stream) {
  if (a.kernel < 1) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t total = a.batch * a.channels * a.length;
  if (total > 0) {
    causal_conv_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, total);
    if (const int st = launch_status()) return st;
  }
  const int64_t states = a.batch * a.channels * (a.kernel - 1);
  if (a.present && states > 0) {
    causal_conv_state_kernel<<<blocks_for(states), kThreads, 0, stream>>>(a, states);
    return launch_status();
  }
  return 0;
}

int rms_norm(const RmsNormArgs& a, StreamT stream) {
  if (a.rows <= 0 || a.len <= 0) return 0;
  if (a.norm_rank > kMaxNormDims) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t blocks = a.rows < 65535LL * 16 ? a.rows : 65535LL * 16;
  rms_norm_kernel<<<static_cast<unsigned>(blocks), kNormThreads, 0, stream>>>(a);
  return launch_status();
}

int lp_norm(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p, StreamT stream) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || dim <= 0) return 0;
  lp_norm_kernel<<<blocks_for(lines), kThreads, 0, stream>>>(x, y, outer, dim, inner, p);
  return launch_status();
}

int cumprod(const void* x, void* y, const void* axis_dev, bool axis_is_64, int rank, const int64_t* dims,
            bool exclusive, bool reverse, int dtype, StreamT stream) {
  if (rank < 1 || rank > kMaxNormDims) return static_cast<int>(cudaErrorInvalidValue);
  CumDims s;
  s.rank = rank;
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= (s.d[d] = dims[d]);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (dtype) {
#define KILNRT_CUMPROD(C, T, A)                                                                                      \
  case C:                                                                                                            \
    cumprod_kernel<T, A><<<g, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), axis_dev,         \
                                                     axis_is_64, s, exclusive, reverse);                             \
    break;
    KILNRT_CUMPROD(0, float, double) KILNRT_CUMPROD(1, int64_t, int64_t) KILNRT_CUMPROD(2, int32_t, int64_t)
    KILNRT_CUMPROD(6, double, double)
#undef KILNRT_CUMPROD
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::linatt
