// Tiled NHWC depthwise convolution with the epilogue fused (nhwc_depthwise.h): convnext's 7x7 and
// efficientnet's / mobilenet's 3x3 and 5x5 depthwise layers run 7-9x off memory bandwidth on the 8-channel kernel,
// followed by a separate bias + activation pass over the output.
//
// A CTA computes an output tile of th = rs * TY rows x tw columns for cg groups of 8 channels of one image:
//  - it copies the input window of the tile ((th - 1) * S + K rows x (tw - 1) * S + K columns x cg * 8 channels,
//    zeros outside the image: no bounds checks in the inner loop) into shared memory with 16-byte loads, and the
//    tile's weights, converted to float32 once;
//  - each thread owns 8 channels x TY consecutive output rows of one column: per kernel column kx it holds the K
//    weights of that column in registers and slides down the (TY - 1) * S + K input rows of its column, each
//    loaded from shared memory once and used by every output row covering it (float32 accumulation);
//  - the epilogue (bias, residual, activation: conv_activation.cuh) is applied in registers and each output is
//    rounded and stored once with a 16-byte store; an input activation (FusedConv's input_activation, moved here
//    from the 1x1 expand convolution by passes/move_input_activation) is applied to the window in shared memory.
// Threads of a warp take consecutive channel groups, then consecutive columns, so their 16-byte shared loads are
// consecutive (stride 1: no bank conflicts) and their global loads / stores coalesced. rs, tw and TY are picked per
// layer (pick_tile) so that small layers (batch 1) still give every SM work and the tile fits 48 KB of shared memory.
// On an H100 (fp16, 2026-11-22) the 7x7 layers are still ~5x off bandwidth; figures: bench/results/README.md.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda/kernels/conv_activation.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/conv/cuda/nhwc_depthwise.h"
#include "cuda/kernels/storage16.cuh"
#include "core/env_switch.h"

namespace kilnrt::cuda::kernels {
namespace {

constexpr int kMaxThreads = 256;
constexpr int kMaxSmem = 48 * 1024;          // the default dynamic shared memory limit: no function attribute to set
constexpr int64_t kFillThreads = 32 * 1024;  // ~132 SMs x 256: below this, fewer rows per thread

using storage16::to_f;  // storage16.cuh

__device__ __forceinline__ void unpack8(const uint4& u, float* v, __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void unpack8(const uint4& u, float* v, __nv_bfloat16) {
  const uint32_t* h = reinterpret_cast<const uint32_t*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // bfloat16 -> float32 is the 16 bits moved up
    v[2 * i] = __uint_as_float(h[i] << 16);
    v[2 * i + 1] = __uint_as_float(h[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ uint4 pack8(const float* v, __half) {
  uint4 u;
  __half2* h = reinterpret_cast<__half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  return u;
}
__device__ __forceinline__ uint4 pack8(const float* v, __nv_bfloat16) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  return u;
}

// 16 bytes global -> shared without a register round trip (sm_80+: cp.async, zero-filled when !valid; `src` must
// be a valid address either way), so that a thread's copies are all in flight together.
__device__ __forceinline__ void copy16_async(uint4* dst, const void* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
#else
  *dst = valid ? __ldg(reinterpret_cast<const uint4*>(src)) : make_uint4(0u, 0u, 0u, 0u);
#endif
}
__device__ __forceinline__ void copy_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void copy_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// The layer's geometry in int32 (depthwise_nhwc_tile_geometry checked that every index fits) and the tile shape.
struct TileArgs {
  int c, h, w, oh, ow, ph, pw;
  int cg;       // 8-channel groups per CTA
  int tw, rs;   // output columns per CTA, row strips (of TY rows) per CTA
  int iw, ih;   // input window of the tile
  int tiles_w;  // CTAs along x
  int act;
  float a, b;
  int in_act;  // input activation, applied in shared memory to the in-image elements (nhwc_depthwise.h)
  float in_a, in_b;
  int in_zero;  // in_act(0) == 0: applied to the whole window (its zero padding stays zero), no bounds test
};

// The input and output activations in fast math (conv_act::activate_fast): every element of the input window goes
// through the input one, up to ~4x the outputs (stride 2), and the accurate forms made the layers compute-bound.
using conv_act::activate_fast;

// Applies the input activation to 16-bit 8-channel pack u.
template <typename T>
__device__ __forceinline__ uint4 in_activate8(const uint4& u, const TileArgs& t) {
  float v[8];
  unpack8(u, v, T());
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = activate_fast(t.in_act, v[k], t.in_a, t.in_b);
  return pack8(v, T());
}

template <typename T, int K, int S, int TY>
__global__ void __launch_bounds__(kMaxThreads, 2)
    dw_tile_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                   const T* __restrict__ z, T* __restrict__ y, TileArgs t) {
  extern __shared__ uint4 smem[];  // [ih][iw][cg] input (8 x 16 bits), then [K*K][cg] x 2 float4 weights
  const int cg = t.cg, groups = t.c / 8;
  const int g0 = blockIdx.y * cg, gn = min(cg, groups - g0), n = blockIdx.z;
  const int ox0 = (blockIdx.x % t.tiles_w) * t.tw, oy0 = (blockIdx.x / t.tiles_w) * (t.rs * TY);
  const int ix0 = ox0 * S - t.pw, iy0 = oy0 * S - t.ph;
  uint4* tile = smem;
  float4* wsm = reinterpret_cast<float4*>(smem + t.ih * t.iw * cg);

  // The input window by asynchronous 16-byte copies (zero-filled outside the image): every copy of the thread in
  // flight at once. Then the weights, converted to float32, while the copies land.
  const T* xb = x + static_cast<int64_t>(n) * t.h * t.w * t.c + g0 * 8;
  const int tile_elems = t.ih * t.iw * cg;
  for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
    const int g = i % cg, rc = i / cg;
    const int ix = ix0 + rc % t.iw, iy = iy0 + rc / t.iw;
    const bool in = g < gn && iy >= 0 && iy < t.h && ix >= 0 && ix < t.w;
    copy16_async(tile + i, in ? xb + (iy * t.w + ix) * t.c + g * 8 : xb, in);
  }
  copy_commit();
  constexpr int kBatch = 4;  // weight loads in flight per thread
  for (int base = threadIdx.x; base < K * K * cg; base += kBatch * blockDim.x) {
    uint4 raw[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x, g = i % cg, tap = i / cg;
      raw[u] = i < K * K * cg && g < gn ? __ldg(reinterpret_cast<const uint4*>(w + tap * t.c + (g0 + g) * 8))
                                        : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i >= K * K * cg) break;
      float f[8];
      unpack8(raw[u], f, T());
      wsm[2 * i] = make_float4(f[0], f[1], f[2], f[3]);
      wsm[2 * i + 1] = make_float4(f[4], f[5], f[6], f[7]);
    }
  }
  copy_wait_all();
  if (t.in_act != 0 && t.in_zero) {
    // The input activation over this thread's own copies (landed: cp.async.wait_group), rounded back to 16 bits
    // like a separate activation pass; in_act(0) == 0 keeps the zero padding zero.
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) tile[i] = in_activate8<T>(tile[i], t);
  } else if (t.in_act != 0) {  // in_act(0) != 0 (HardSigmoid, Sigmoid, Clip above 0): in-image elements only
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
      const int g = i % cg, rc = i / cg;
      const int ix = ix0 + rc % t.iw, iy = iy0 + rc / t.iw;
      if (g < gn && iy >= 0 && iy < t.h && ix >= 0 && ix < t.w) tile[i] = in_activate8<T>(tile[i], t);
    }
  }
  __syncthreads();

  const int g = threadIdx.x % cg, rest = threadIdx.x / cg;
  const int col = rest % t.tw, strip = rest / t.tw;
  const int ox = ox0 + col, oy = oy0 + strip * TY;
  if (g >= gn || strip >= t.rs || ox >= t.ow || oy >= t.oh) return;

  float acc[TY][8];
#pragma unroll
  for (int r = 0; r < TY; ++r)
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[r][k] = 0.f;
  const int row_stride = t.iw * cg;
  const uint4* tcol = tile + strip * TY * S * row_stride + col * S * cg + g;
#pragma unroll 1
  for (int kx = 0; kx < K; ++kx) {
    float wv[K][8];
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const float4 lo = wsm[2 * ((ky * K + kx) * cg + g)], hi = wsm[2 * ((ky * K + kx) * cg + g) + 1];
      wv[ky][0] = lo.x, wv[ky][1] = lo.y, wv[ky][2] = lo.z, wv[ky][3] = lo.w;
      wv[ky][4] = hi.x, wv[ky][5] = hi.y, wv[ky][6] = hi.z, wv[ky][7] = hi.w;
    }
    const uint4* tc = tcol + kx * cg;
#pragma unroll
    for (int j = 0; j < (TY - 1) * S + K; ++j) {
      float v[8];
      unpack8(tc[j * row_stride], v, T());
#pragma unroll
      for (int r = 0; r < TY; ++r) {
        const int ky = j - r * S;
        if (ky < 0 || ky >= K) continue;  // resolved at compile time (j, r unrolled)
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[r][k] = fmaf(v[k], wv[ky][k], acc[r][k]);
      }
    }
  }

  const int c0 = (g0 + g) * 8;
  float bv[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (bias) {
#pragma unroll
    for (int k = 0; k < 8; ++k) bv[k] = to_f(bias[c0 + k]);  // any alignment; once per thread
  }
#pragma unroll
  for (int r = 0; r < TY; ++r) {
    if (oy + r >= t.oh) break;
    const int64_t off = ((static_cast<int64_t>(n) * t.oh + oy + r) * t.ow + ox) * t.c + c0;
    float o[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) o[k] = acc[r][k] + bv[k];
    if (z) {
      float zv[8];
      unpack8(__ldg(reinterpret_cast<const uint4*>(z + off)), zv, T());
#pragma unroll
      for (int k = 0; k < 8; ++k) o[k] += zv[k];
    }
    if (t.act != 0) {
#pragma unroll
      for (int k = 0; k < 8; ++k) o[k] = activate_fast(t.act, o[k], t.a, t.b);
    }
    *reinterpret_cast<uint4*>(y + off) = pack8(o, T());
  }
}

int smem_bytes(const TileArgs& t, int k) { return (t.ih * t.iw * t.cg) * 16 + k * k * t.cg * 32; }

// Rows per thread: the most of 4 (7x7 stride 1) / 2 (others), 2, 1 that still gives kFillThreads threads (H100 fp16
// b32, 2026-11-22: 4 rows best for convnext's 7x7, 2 for efficientnet's 3x3 / 5x5).
// KILNRT_CUDA_DW_ROWS=1/2/4 forces it (read once; a knob for benchmarks).
int pick_rows(const Conv2d& p) {
  static const int forced = [] {
    const char* env = std::getenv("KILNRT_CUDA_DW_ROWS");
    const int v = env ? std::atoi(env) : 0;
    return v == 1 || v == 2 || v == 4 ? v : 0;
  }();
  if (forced) return forced;
  const int64_t outputs = p.n * p.oh * p.ow * (p.c / 8);
  for (int ty = p.sh == 1 && p.kh == 7 ? 4 : 2; ty > 1; ty /= 2)
    if (outputs / ty >= kFillThreads) return ty;
  return 1;
}

TileArgs pick_tile(const Conv2d& p, int ty) {
  TileArgs t{};
  t.c = static_cast<int>(p.c), t.h = static_cast<int>(p.h), t.w = static_cast<int>(p.w);
  t.oh = static_cast<int>(p.oh), t.ow = static_cast<int>(p.ow), t.ph = p.ph, t.pw = p.pw;
  const int k = p.kh, s = p.sh, groups = t.c / 8;
  const int chunks = (groups + 7) / 8;
  t.cg = (groups + chunks - 1) / chunks;  // <= 8 groups (64 channels) per CTA, chunks as even as they come
  t.tw = t.ow < (s == 1 ? 16 : 8) ? t.ow : (s == 1 ? 16 : 8);
  const int strips = (t.oh + ty - 1) / ty;
  t.rs = kMaxThreads / (t.cg * t.tw);
  t.rs = t.rs < 1 ? 1 : (t.rs > strips ? strips : t.rs);
  auto window = [&] {
    t.ih = (t.rs * ty - 1) * s + k;
    t.iw = (t.tw - 1) * s + k;
  };
  window();
  while (smem_bytes(t, k) > kMaxSmem && t.rs > 1) --t.rs, window();
  while (smem_bytes(t, k) > kMaxSmem && t.tw > 1) t.tw = (t.tw + 1) / 2, window();
  t.tiles_w = (t.ow + t.tw - 1) / t.tw;
  return t;
}

template <typename T, int K, int S, int TY>
int launch(const void* x, const void* w, void* y, const Conv2d& p, const DepthwiseEpilogue& e, cudaStream_t s) {
  TileArgs t = pick_tile(p, TY);
  t.act = e.act, t.a = e.a, t.b = e.b;
  t.in_act = e.in_act, t.in_a = e.in_a, t.in_b = e.in_b;
  // act(0) == 0: relu, leaky relu, hard swish, silu, gelu (both), clip with a <= 0 <= b.
  t.in_zero = e.in_act == 1 || e.in_act == 3 || e.in_act == 5 || e.in_act == 7 || e.in_act == 8 || e.in_act == 9 ||
              (e.in_act == 2 && e.in_a <= 0.f && e.in_b >= 0.f);
  const int smem = smem_bytes(t, K);
  if (smem > kMaxSmem) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t tiles_h = (p.oh + t.rs * TY - 1) / (t.rs * TY);
  const int64_t tiles = tiles_h * t.tiles_w;
  if (tiles > 0x7fffffff) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>((p.c / 8 + t.cg - 1) / t.cg),
                  static_cast<unsigned>(p.n));
  dw_tile_kernel<T, K, S, TY><<<grid, t.cg * t.tw * t.rs, smem, s>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                                                     static_cast<const T*>(e.bias),
                                                                     static_cast<const T*>(e.z), static_cast<T*>(y), t);
  return launch_common::launch_status();
}

template <typename T, int K, int S>
int launch_rows(const void* x, const void* w, void* y, const Conv2d& p, const DepthwiseEpilogue& e, cudaStream_t s,
                int ty) {
  switch (ty) {
    case 1: return launch<T, K, S, 1>(x, w, y, p, e, s);
    case 2: return launch<T, K, S, 2>(x, w, y, p, e, s);
    default: return launch<T, K, S, 4>(x, w, y, p, e, s);
  }
}

template <typename T>
int launch_any(const void* x, const void* w, void* y, const Conv2d& p, const DepthwiseEpilogue& e, cudaStream_t s,
               int ty) {
  const bool s1 = p.sh == 1;
  switch (p.kh) {
    case 3: return s1 ? launch_rows<T, 3, 1>(x, w, y, p, e, s, ty) : launch_rows<T, 3, 2>(x, w, y, p, e, s, ty);
    case 5: return s1 ? launch_rows<T, 5, 1>(x, w, y, p, e, s, ty) : launch_rows<T, 5, 2>(x, w, y, p, e, s, ty);
    case 7: return s1 ? launch_rows<T, 7, 1>(x, w, y, p, e, s, ty) : launch_rows<T, 7, 2>(x, w, y, p, e, s, ty);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool depthwise_nhwc_tile_enabled() {
  static const bool on = !env_switched_off("KILNRT_CUDA_DW_TILE");
  return on;
}

bool depthwise_nhwc_tile_geometry(const Conv2d& p) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 16;
  const bool shape = p.k == p.c && p.groups == p.c && p.c % 8 == 0 && p.c > 0 && p.kh == p.kw &&
                     (p.kh == 3 || p.kh == 5 || p.kh == 7) && p.sh == p.sw && (p.sh == 1 || p.sh == 2) && p.dh == 1 &&
                     p.dw == 1 && p.n >= 1 && p.n <= 65535 && p.oh >= 1 && p.ow >= 1 && p.ph >= 0 && p.pw >= 0;
  return shape && p.h * p.w * p.c < kMax && p.oh * p.ow * p.c < kMax && p.h + 2 * p.ph + 8 < kMax &&
         p.w + 2 * p.pw + 8 < kMax;
}

bool depthwise_nhwc_tile_applies(const void* x, const void* w, const void* y, const void* z, const Conv2d& p) {
  return depthwise_nhwc_tile_enabled() && depthwise_nhwc_tile_geometry(p) && aligned16(x) && aligned16(w) &&
         aligned16(y) && (z == nullptr || aligned16(z));
}

int depthwise_conv2d_nhwc_tile(int dt, const void* x, const void* w, void* y, const Conv2d& p,
                               const DepthwiseEpilogue& e, StreamT stream, int rows_per_thread) {
  if (!depthwise_nhwc_tile_geometry(p) || !aligned16(x) || !aligned16(w) || !aligned16(y) || (e.z && !aligned16(e.z)))
    return static_cast<int>(cudaErrorInvalidValue);
  const int ty = rows_per_thread == 1 || rows_per_thread == 2 || rows_per_thread == 4 ? rows_per_thread : pick_rows(p);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 1: return launch_any<__half>(x, w, y, p, e, s, ty);
    case 2: return launch_any<__nv_bfloat16>(x, w, y, p, e, s, ty);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
