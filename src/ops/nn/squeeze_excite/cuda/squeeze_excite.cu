// Squeeze-and-excitation block kernels (see squeeze_excite_kernels.h). Three launches, each spread over many CTAs (the
// first version did the mat-vecs in one CTA per sample: latency-bound, 0.05-0.13 ms per block on the H100):
//  - se_partial_{nhwc,nchw}: channel sums of a part of one sample (NHWC: a strip of rows; NCHW: 8 channels x a
//    chunk of positions) -> float32 partial sums (workspace);
//  - se_fc1: a tile of W1 rows per CTA: the channel means (the partial sums added in a fixed order: deterministic),
//    then h = act(W1 mean + B1) for its rows (workspace);
//  - se_fc2_scale: a channel tile x position strip per CTA: s = gate(W2 h + B2) for its channels (Cs MACs per
//    channel, in shared memory), then Y = X * s over the strip, 16-byte vectors where the layout allows.
// The loops over rows / positions / partial sums are unrolled 4x so that four independent loads are in flight per
// thread (late EfficientNet blocks: 1152 channels, a single row lane per channel group, 14 rows per CTA: the loads
// of a rolled loop waited on each other).
// Mat-vecs: a group of gs lanes (a power of two inside a warp) per output row, 16-byte weight loads along the row,
// reduced by shuffles inside the group.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/conv_activation.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"
#include "ops/nn/squeeze_excite/cuda/squeeze_excite_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using conv_act::activate;

using storage16::from_f;
using storage16::Pack;
using storage16::to_f;

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
#pragma unroll 4
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
#pragma unroll 4
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

// Sums of channels [c0, c1) over positions [p0, p1) of one NCHW sample xs ([C, hw]) -> out[c]: a warp per channel
// (VEC: p0 and hw multiples of the vector width). Ends with __syncthreads.
template <typename T, bool VEC>
__device__ void nchw_sums(const T* xs, int64_t hw, int64_t p0, int64_t p1, int c0, int c1, float* out) {
  constexpr int V = VEC ? Pack<T>::kN : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int c = c0 + warp; c < c1; c += kWarps) {  // uniform inside the warp
    const T* p = xs + c * hw + p0;
    const int64_t count = p1 - p0;
    float s = 0.f;
    if constexpr (VEC) {
      const Pack<T>* pv = reinterpret_cast<const Pack<T>*>(p);
#pragma unroll 4
      for (int64_t i = lane; i < count / V; i += 32) {
        const Pack<T> v = pv[i];
#pragma unroll
        for (int k = 0; k < V; ++k) s += to_f(v.e[k]);
      }
    } else {
#pragma unroll 4
      for (int64_t i = lane; i < count; i += 32) s += to_f(p[i]);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    if (lane == 0) out[c] = s;
  }
  __syncthreads();
}

// out[r] = act(scale * (W[r, :] . v) + b[r]) for r < rows; W is [rows, K]; v in shared memory.
template <typename T>
__device__ void matvec(const T* W, const T* b, const float* v, int rows, int K, bool vec, int gs, float scale, int act,
                       float a, float bb, float* out) {
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
#pragma unroll 4
        for (int k = gl; k < K / V; k += gs) {
          const Pack<T> p = wp[k];
#pragma unroll
          for (int i = 0; i < V; ++i) acc += to_f(p.e[i]) * v[k * V + i];
        }
      } else {
#pragma unroll 4
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

// grid: channel groups (a warp each) x position chunks x N.
template <typename T, bool VEC>
__global__ void __launch_bounds__(kBlock)
    se_partial_nchw(const T* __restrict__ x, float* __restrict__ partial, int C, int64_t hw, int64_t chunk, int K) {
  const int64_t n = blockIdx.z;
  const int k = blockIdx.y;
  const int c0 = blockIdx.x * kWarps, c1 = c0 + kWarps < C ? c0 + kWarps : C;
  const int64_t p0 = k * chunk, p1 = p0 + chunk < hw ? p0 + chunk : hw;
  nchw_sums<T, VEC>(x + n * C * hw, hw, p0, p1, c0, c1, partial + (n * K + k) * C);
}

// h[n, r] = act(W1[r, :] . mean[n] + B1[r]) for the rows of this CTA (grid: row tiles x N). Each CTA adds the K
// partial sums of every channel in a fixed order (deterministic) into shared memory first.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    se_fc1(const float* __restrict__ partial, int K, int C, int64_t hw, const T* __restrict__ w1,
           const T* __restrict__ b1, int Cs, int rows_per_cta, bool vec, int gs, int act, float a, float b,
           float* __restrict__ hidden) {
  extern __shared__ float mean[];
  const int64_t n = blockIdx.y;
  for (int c = threadIdx.x; c < C; c += kBlock) {
    float s = 0.f;
#pragma unroll 4
    for (int k = 0; k < K; ++k) s += partial[(n * K + k) * C + c];
    mean[c] = s;
  }
  __syncthreads();
  const int r0 = blockIdx.x * rows_per_cta;
  const int rows = Cs - r0 < rows_per_cta ? Cs - r0 : rows_per_cta;
  matvec<T>(w1 + static_cast<int64_t>(r0) * C, b1 ? b1 + r0 : nullptr, mean, rows, C, vec, gs,
            1.f / static_cast<float>(hw), act, a, b, hidden + n * Cs + r0);
}

// Y = X * s over channels [c0, c0 + tile) x positions [p0, p1) of sample n (grid: position strips x channel tiles
// x N); s for the tile's channels first: gate(W2[c, :] . h[n] + B2[c]) in shared memory.
template <typename T, bool VEC>
__global__ void __launch_bounds__(kBlock)
    se_fc2_scale(const T* __restrict__ x, const float* __restrict__ hidden, const T* __restrict__ w2,
                 const T* __restrict__ b2, int C, int Cs, int64_t hw, int tile, int strip, bool w2vec, int gs, int gate,
                 float a, float b, bool nhwc, T* __restrict__ y) {
  constexpr int V = VEC ? Pack<T>::kN : 1;
  extern __shared__ float smem[];
  float* h = smem;
  float* s = smem + Cs;
  const int64_t n = blockIdx.z;
  const int c0 = blockIdx.y * tile;
  const int ct = C - c0 < tile ? C - c0 : tile;
  const int64_t p0 = static_cast<int64_t>(blockIdx.x) * strip;
  const int len = static_cast<int>(hw - p0 < strip ? hw - p0 : strip);
  for (int j = threadIdx.x; j < Cs; j += kBlock) h[j] = hidden[n * Cs + j];
  __syncthreads();
  matvec<T>(w2 + static_cast<int64_t>(c0) * Cs, b2 ? b2 + c0 : nullptr, h, ct, Cs, w2vec, gs, 1.f, gate, a, b, s);
  __syncthreads();
  if (nhwc) {  // rows p of ct contiguous channels
    const int per_row = ct / V;
    const int64_t base = (n * hw + p0) * C + c0;
    for (int i = threadIdx.x; i < len * per_row; i += kBlock) {
      const int p = i / per_row, cv = i - p * per_row;
      const int64_t off = base + static_cast<int64_t>(p) * C + cv * V;
      if constexpr (VEC) {
        Pack<T> v = *reinterpret_cast<const Pack<T>*>(x + off);
#pragma unroll
        for (int k = 0; k < V; ++k) v.e[k] = from_f<T>(to_f(v.e[k]) * s[cv * V + k]);
        *reinterpret_cast<Pack<T>*>(y + off) = v;
      } else {
        y[off] = from_f<T>(to_f(x[off]) * s[cv]);
      }
    }
  } else {  // channels c of len contiguous positions
    const int per_chan = len / V;
    const int64_t base = (n * C + c0) * hw + p0;
    for (int i = threadIdx.x; i < ct * per_chan; i += kBlock) {
      const int c = i / per_chan, pv = i - c * per_chan;
      const int64_t off = base + static_cast<int64_t>(c) * hw + pv * V;
      const float sc = s[c];
      if constexpr (VEC) {
        Pack<T> v = *reinterpret_cast<const Pack<T>*>(x + off);
#pragma unroll
        for (int k = 0; k < V; ++k) v.e[k] = from_f<T>(to_f(v.e[k]) * sc);
        *reinterpret_cast<Pack<T>*>(y + off) = v;
      } else {
        y[off] = from_f<T>(to_f(x[off]) * sc);
      }
    }
  }
}

int group_size(int64_t units) {
  int g = 1;
  while (g < 32 && g < units) g <<= 1;
  return g;
}

using launch_common::aligned16;

constexpr int kChannelTile = 64;

template <typename T>
int run(const SqueezeExciteArgs& a, cudaStream_t st) {
  constexpr int V = Pack<T>::kN;
  const int C = static_cast<int>(a.c), Cs = static_cast<int>(a.cs);
  const int64_t N = a.n, hw = a.hw;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const bool xvec = aligned16(a.x) && aligned16(a.y) && (a.nhwc ? C % V == 0 : hw % V == 0);
  const int64_t avail = static_cast<int64_t>(a.workspace_bytes / sizeof(float));
  const int64_t h_floats = (N * Cs + 63) / 64 * 64;  // hidden, then the partial sums (256-byte aligned)
  if (h_floats + N * C > avail) return static_cast<int>(cudaErrorInvalidValue);
  float* hidden = static_cast<float*>(a.workspace);
  float* partial = hidden + h_floats;
  const int64_t room = avail - h_floats;
  const int64_t scratch_floats = C > kBlock * V ? C : kBlock * V;
  // 1. partial channel sums
  int64_t K = 1;
  if (a.nhwc) {
    int64_t rows = kChunkElems / C > 0 ? kChunkElems / C : 1;
    K = (hw + rows - 1) / rows;
    while (K > 1 && N * K * C > room) {
      rows *= 2;
      K = (hw + rows - 1) / rows;
    }
    const dim3 grid(static_cast<unsigned>(K), static_cast<unsigned>(N));
    const size_t smem = static_cast<size_t>(scratch_floats) * sizeof(float);
    if (xvec)
      se_partial_nhwc<T, true><<<grid, kBlock, smem, st>>>(x, partial, C, hw, rows, static_cast<int>(K));
    else
      se_partial_nhwc<T, false><<<grid, kBlock, smem, st>>>(x, partial, C, hw, rows, static_cast<int>(K));
  } else {
    int64_t chunk = kChunkElems / kWarps;  // positions per warp: a multiple of every vector width
    K = (hw + chunk - 1) / chunk;
    while (K > 1 && N * K * C > room) {
      chunk *= 2;
      K = (hw + chunk - 1) / chunk;
    }
    const dim3 grid(static_cast<unsigned>((C + kWarps - 1) / kWarps), static_cast<unsigned>(K),
                    static_cast<unsigned>(N));
    if (xvec)
      se_partial_nchw<T, true><<<grid, kBlock, 0, st>>>(x, partial, C, hw, chunk, static_cast<int>(K));
    else
      se_partial_nchw<T, false><<<grid, kBlock, 0, st>>>(x, partial, C, hw, chunk, static_cast<int>(K));
  }
  int status = launch_common::launch_status();
  if (status != 0) return status;
  // 2. h = act(W1 mean + B1): one group of gs1 lanes per row, one pass of the CTA's groups per CTA
  const bool w1vec = aligned16(a.w1) && C % V == 0;
  const int gs1 = group_size(w1vec ? C / V : C);
  const int rows1 = kWarps * (32 / gs1);
  {
    const dim3 grid(static_cast<unsigned>((Cs + rows1 - 1) / rows1), static_cast<unsigned>(N));
    se_fc1<T><<<grid, kBlock, static_cast<size_t>(C) * sizeof(float), st>>>(
        partial, static_cast<int>(K), C, hw, static_cast<const T*>(a.w1), static_cast<const T*>(a.b1), Cs, rows1, w1vec,
        gs1, a.act, a.act_a, a.act_b, hidden);
  }
  status = launch_common::launch_status();
  if (status != 0) return status;
  // 3. s = gate(W2 h + B2) per channel tile, then Y = X * s over a strip of positions
  const bool w2vec = aligned16(a.w2) && Cs % V == 0;
  const int gs2 = group_size(w2vec ? Cs / V : Cs);
  const int tile = C < kChannelTile ? C : kChannelTile;
  int64_t strip = kChunkElems / tile > 0 ? kChunkElems / tile : 1;
  if (!a.nhwc) strip = (strip + V - 1) / V * V;  // whole vectors per channel strip
  if (strip > hw) strip = hw;
  const int64_t strips = (hw + strip - 1) / strip;
  if (strips > 0x7fffffffLL || N > 65535) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>((C + tile - 1) / tile),
                  static_cast<unsigned>(N));
  const size_t smem = static_cast<size_t>(Cs + tile) * sizeof(float);
  const auto w2 = static_cast<const T*>(a.w2), b2 = static_cast<const T*>(a.b2);
  if (xvec)
    se_fc2_scale<T, true><<<grid, kBlock, smem, st>>>(x, hidden, w2, b2, C, Cs, hw, tile, static_cast<int>(strip),
                                                      w2vec, gs2, a.gate, a.gate_a, a.gate_b, a.nhwc, y);
  else
    se_fc2_scale<T, false><<<grid, kBlock, smem, st>>>(x, hidden, w2, b2, C, Cs, hw, tile, static_cast<int>(strip),
                                                       w2vec, gs2, a.gate, a.gate_a, a.gate_b, a.nhwc, y);
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
