// Squeeze-and-excitation block kernels (see squeeze_excite.h). Three kernels:
//  - se_partial_{nhwc,nchw}: channel sums of a part of one sample -> float32 partial sums (workspace);
//  - se_excite: one CTA per sample: the channel means (from X directly for small samples, else from the partial
//    sums in a fixed order: deterministic), W1 mat-vec + activation, W2 mat-vec + gate -> s[n, c] (workspace);
//  - se_scale: Y = X * s[n, c], 16-byte vectors where the layout allows.
// Mat-vecs: a group of gs lanes (a power of two inside a warp) per output row, 16-byte weight loads along the row,
// reduced by shuffles inside the group.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/conv_activation.cuh"
#include "backends/cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/squeeze_excite.h"

namespace kilnrt::cuda::kernels {
namespace {

using conv_act::activate;
using launch_common::blocks_for;

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
struct alignas(16) Pack {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
  T e[kN];
};

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int64_t kChunkElems = 16384;  // elements of X per partial-sum CTA (NHWC)
constexpr unsigned kFull = 0xffffffffu;

// Channel sums over rows [r0, r1) of one NHWC sample xs ([rows, C]) -> out[0, C) (shared or global memory).
// scratch: shared memory of max(kBlock * V, C) floats. Ends with __syncthreads.
template <typename T, bool VEC>
__device__ void nhwc_sums(const T* xs, int C, int64_t r0, int64_t r1, float* scratch, float* out) {
  constexpr int V = VEC ? Pack<T>::kN : 1;
  const int G = C / V;  // VEC: C % V == 0
  const int t = threadIdx.x;
  if (G <= kBlock) {
    const int R = kBlock / G, g = t % G, rl = t / G;  // R row lanes of G threads
    if (rl < R) {
      float acc[V];
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] = 0.f;
      for (int64_t r = r0 + rl; r < r1; r += R) {
        const T* p = xs + r * C + g * V;
        if constexpr (VEC) {
          const Pack<T> v = *reinterpret_cast<const Pack<T>*>(p);
#pragma unroll
          for (int i = 0; i < V; ++i) acc[i] += to_f(v.e[i]);
        } else {
          acc[0] += to_f(p[0]);
        }
      }
#pragma unroll
      for (int i = 0; i < V; ++i) scratch[rl * C + g * V + i] = acc[i];
    }
    __syncthreads();
    for (int c = t; c < C; c += kBlock) {
      float s = 0.f;
      for (int k = 0; k < R; ++k) s += scratch[k * C + c];
      out[c] = s;
    }
  } else {
    for (int g = t; g < G; g += kBlock) {
      float acc[V];
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] = 0.f;
      for (int64_t r = r0; r < r1; ++r) {
        const T* p = xs + r * C + g * V;
        if constexpr (VEC) {
          const Pack<T> v = *reinterpret_cast<const Pack<T>*>(p);
#pragma unroll
          for (int i = 0; i < V; ++i) acc[i] += to_f(v.e[i]);
        } else {
          acc[0] += to_f(p[0]);
        }
      }
#pragma unroll
      for (int i = 0; i < V; ++i) out[g * V + i] = acc[i];
    }
  }
  __syncthreads();
}

// Sums of channels [c0, c1) of one NCHW sample xs ([C, hw]) -> out[c]: a warp per channel. Ends with __syncthreads.
template <typename T, bool VEC>
__device__ void nchw_sums(const T* xs, int64_t hw, int c0, int c1, float* out) {
  constexpr int V = VEC ? Pack<T>::kN : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int c = c0 + warp; c < c1; c += kWarps) {  // uniform inside the warp
    const T* p = xs + c * hw;
    float s = 0.f;
    if constexpr (VEC) {
      const Pack<T>* pv = reinterpret_cast<const Pack<T>*>(p);
      for (int64_t i = lane; i < hw / V; i += 32) {
        const Pack<T> v = pv[i];
#pragma unroll
        for (int k = 0; k < V; ++k) s += to_f(v.e[k]);
      }
    } else {
      for (int64_t i = lane; i < hw; i += 32) s += to_f(p[i]);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    if (lane == 0) out[c] = s;
  }
  __syncthreads();
}

// out[r] = act(scale * (W[r, :] . v) + b[r]) for r < rows; W is [rows, K]; v in shared memory.
template <typename T>
__device__ void matvec(const T* W, const T* b, const float* v, int rows, int K, bool vec, int gs, float scale,
                       int act, float a, float bb, float* out) {
  constexpr int V = Pack<T>::kN;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rpw = 32 / gs, gi = lane / gs, gl = lane % gs;
  for (int base = warp * rpw; base < rows; base += kWarps * rpw) {  // uniform inside the warp: shuffles below
    const int r = base + gi;
    float acc = 0.f;
    if (r < rows) {
      const T* wr = W + static_cast<int64_t>(r) * K;
      if (vec) {
        const Pack<T>* wp = reinterpret_cast<const Pack<T>*>(wr);
        for (int k = gl; k < K / V; k += gs) {
          const Pack<T> p = wp[k];
#pragma unroll
          for (int i = 0; i < V; ++i) acc += to_f(p.e[i]) * v[k * V + i];
        }
      } else {
        for (int k = gl; k < K; k += gs) acc += to_f(wr[k]) * v[k];
      }
    }
    for (int o = gs >> 1; o > 0; o >>= 1) acc += __shfl_xor_sync(kFull, acc, o);
    if (r < rows && gl == 0) out[r] = activate(act, acc * scale + (b ? to_f(b[r]) : 0.f), a, bb);
  }
}

template <typename T, bool VEC>
__global__ void __launch_bounds__(kBlock) se_partial_nhwc(const T* __restrict__ x, float* __restrict__ partial, int C,
                                                          int64_t hw, int64_t rows_per_chunk, int K) {
  extern __shared__ float smem[];
  const int64_t n = blockIdx.y;
  const int k = blockIdx.x;
  const int64_t r0 = k * rows_per_chunk, r1 = r0 + rows_per_chunk < hw ? r0 + rows_per_chunk : hw;
  nhwc_sums<T, VEC>(x + n * hw * C, C, r0, r1, smem, partial + (n * K + k) * C);
}

template <typename T, bool VEC>
__global__ void __launch_bounds__(kBlock) se_partial_nchw(const T* __restrict__ x, float* __restrict__ partial, int C,
                                                          int64_t hw) {
  const int64_t n = blockIdx.y;
  const int c0 = blockIdx.x * kWarps, c1 = c0 + kWarps < C ? c0 + kWarps : C;
  nchw_sums<T, VEC>(x + n * C * hw, hw, c0, c1, partial + n * C);
}

struct ExciteParams {
  int C, Cs, K;  // K: partial sums per channel (x == nullptr)
  int64_t hw;
  bool nhwc, w1vec, w2vec;
  int gs1, gs2;
  int act, gate;
  float act_a, act_b, gate_a, gate_b;
};

// One CTA per sample. x != nullptr: sums the sample itself; else adds the K partial sums of each channel.
template <typename T, bool XVEC>
__global__ void __launch_bounds__(kBlock) se_excite(const T* __restrict__ x, const float* __restrict__ partial,
                                                    const T* __restrict__ w1, const T* __restrict__ b1,
                                                    const T* __restrict__ w2, const T* __restrict__ b2,
                                                    float* __restrict__ s_out, ExciteParams p) {
  extern __shared__ float smem[];
  float* mean = smem;
  float* hidden = mean + p.C;
  float* scratch = hidden + p.Cs;
  const int64_t n = blockIdx.x;
  if (x) {
    if (p.nhwc) nhwc_sums<T, XVEC>(x + n * p.hw * p.C, p.C, 0, p.hw, scratch, mean);
    else nchw_sums<T, XVEC>(x + n * p.C * p.hw, p.hw, 0, p.C, mean);
  } else {
    for (int c = threadIdx.x; c < p.C; c += kBlock) {
      float s = 0.f;
      for (int k = 0; k < p.K; ++k) s += partial[(n * p.K + k) * p.C + c];
      mean[c] = s;
    }
    __syncthreads();
  }
  matvec<T>(w1, b1, mean, p.Cs, p.C, p.w1vec, p.gs1, 1.f / static_cast<float>(p.hw), p.act, p.act_a, p.act_b, hidden);
  __syncthreads();
  matvec<T>(w2, b2, hidden, p.C, p.Cs, p.w2vec, p.gs2, 1.f, p.gate, p.gate_a, p.gate_b, s_out + n * p.C);
}

// y = x * s[n, c]; I: index type (int32 when the tensor allows: cheaper divisions).
template <typename T, bool VEC, typename I>
__global__ void se_scale(const T* __restrict__ x, const float* __restrict__ s, T* __restrict__ y, I total, I C, I hw,
                         bool nhwc) {
  constexpr int V = VEC ? Pack<T>::kN : 1;
  const I nvec = total / V;
  const I chw = C * hw;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < nvec;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I e = i * V;
    const I n = e / chw;
    const I c = nhwc ? e % C : (e - n * chw) / hw;
    const float* sp = s + n * C + c;
    if constexpr (VEC) {
      Pack<T> v = reinterpret_cast<const Pack<T>*>(x)[i];
#pragma unroll
      for (int k = 0; k < V; ++k) v.e[k] = from_f<T>(to_f(v.e[k]) * (nhwc ? sp[k] : sp[0]));
      reinterpret_cast<Pack<T>*>(y)[i] = v;
    } else {
      y[e] = from_f<T>(to_f(x[e]) * sp[0]);
    }
  }
}

int group_size(int64_t units) {
  int g = 1;
  while (g < 32 && g < units) g <<= 1;
  return g;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
int run(const SqueezeExciteArgs& a, cudaStream_t st) {
  constexpr int V = Pack<T>::kN;
  const int C = static_cast<int>(a.c), Cs = static_cast<int>(a.cs);
  const int64_t N = a.n, hw = a.hw, total = a.n * a.c * a.hw;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const bool xvec = aligned16(a.x) && aligned16(a.y) && (a.nhwc ? C % V == 0 : hw % V == 0);
  ExciteParams p{};
  p.C = C;
  p.Cs = Cs;
  p.K = 1;
  p.hw = hw;
  p.nhwc = a.nhwc;
  p.w1vec = aligned16(a.w1) && C % V == 0;
  p.w2vec = aligned16(a.w2) && Cs % V == 0;
  p.gs1 = group_size(p.w1vec ? C / V : C);
  p.gs2 = group_size(p.w2vec ? Cs / V : Cs);
  p.act = a.act;
  p.gate = a.gate;
  p.act_a = a.act_a;
  p.act_b = a.act_b;
  p.gate_a = a.gate_a;
  p.gate_b = a.gate_b;
  const int64_t scratch_floats = C > kBlock * V ? C : kBlock * V;
  const size_t excite_smem = static_cast<size_t>(C + Cs + scratch_floats) * sizeof(float);
  const int64_t avail = static_cast<int64_t>(a.workspace_bytes / sizeof(float));
  const int64_t s_floats = (N * C + 63) / 64 * 64;  // s, then the partial sums (256-byte aligned)
  if (s_floats > avail) return static_cast<int>(cudaErrorInvalidValue);
  float* s = static_cast<float*>(a.workspace);
  const auto w1 = static_cast<const T*>(a.w1), b1 = static_cast<const T*>(a.b1);
  const auto w2 = static_cast<const T*>(a.w2), b2 = static_cast<const T*>(a.b2);
  const bool fused = static_cast<int64_t>(C) * hw <= a.fused_max_elems;
  if (fused) {
    if (xvec) se_excite<T, true><<<static_cast<unsigned>(N), kBlock, excite_smem, st>>>(x, nullptr, w1, b1, w2, b2, s, p);
    else se_excite<T, false><<<static_cast<unsigned>(N), kBlock, excite_smem, st>>>(x, nullptr, w1, b1, w2, b2, s, p);
  } else {
    float* partial = s + s_floats;
    const int64_t room = avail - s_floats;
    if (a.nhwc) {
      int64_t rows = kChunkElems / C > 0 ? kChunkElems / C : 1;
      int64_t K = (hw + rows - 1) / rows;
      while (K > 1 && N * K * C > room) {
        rows *= 2;
        K = (hw + rows - 1) / rows;
      }
      if (N * K * C > room) return static_cast<int>(cudaErrorInvalidValue);
      p.K = static_cast<int>(K);
      const dim3 grid(static_cast<unsigned>(K), static_cast<unsigned>(N));
      const size_t smem = static_cast<size_t>(scratch_floats) * sizeof(float);
      if (xvec) se_partial_nhwc<T, true><<<grid, kBlock, smem, st>>>(x, partial, C, hw, rows, p.K);
      else se_partial_nhwc<T, false><<<grid, kBlock, smem, st>>>(x, partial, C, hw, rows, p.K);
    } else {
      if (N * C > room) return static_cast<int>(cudaErrorInvalidValue);
      const dim3 grid(static_cast<unsigned>((C + kWarps - 1) / kWarps), static_cast<unsigned>(N));
      if (xvec) se_partial_nchw<T, true><<<grid, kBlock, 0, st>>>(x, partial, C, hw);
      else se_partial_nchw<T, false><<<grid, kBlock, 0, st>>>(x, partial, C, hw);
    }
    const int status = launch_common::launch_status();
    if (status != 0) return status;
    se_excite<T, false><<<static_cast<unsigned>(N), kBlock, excite_smem, st>>>(nullptr, partial, w1, b1, w2, b2, s, p);
  }
  const int status = launch_common::launch_status();
  if (status != 0) return status;
  const int64_t units = xvec ? total / V : total;
  const unsigned blocks = blocks_for(units);
  if (total < (int64_t(1) << 31)) {
    const int t = static_cast<int>(total), c = C, h = static_cast<int>(hw);
    if (xvec) se_scale<T, true, int><<<blocks, launch_common::kThreads, 0, st>>>(x, s, y, t, c, h, a.nhwc);
    else se_scale<T, false, int><<<blocks, launch_common::kThreads, 0, st>>>(x, s, y, t, c, h, a.nhwc);
  } else {
    if (xvec) se_scale<T, true, int64_t><<<blocks, launch_common::kThreads, 0, st>>>(x, s, y, total, a.c, hw, a.nhwc);
    else se_scale<T, false, int64_t><<<blocks, launch_common::kThreads, 0, st>>>(x, s, y, total, a.c, hw, a.nhwc);
  }
  return launch_common::launch_status();
}

}  // namespace

int squeeze_excite(const SqueezeExciteArgs& a, StreamT stream) {
  if (a.n < 0 || a.c < 1 || a.cs < 1 || a.hw < 0 || a.c > kSqueezeExciteMaxC || a.cs > kSqueezeExciteMaxCs ||
      a.n > 65535 || !a.x || !a.y || !a.w1 || !a.w2 || !a.workspace)
    return static_cast<int>(cudaErrorInvalidValue);
  if (a.n == 0 || a.hw == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (a.dt) {
    case 0: return run<float>(a, s);
    case 1: return run<__half>(a, s);
    case 2: return run<__nv_bfloat16>(a, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
