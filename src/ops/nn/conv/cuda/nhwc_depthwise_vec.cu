// Depthwise 2-D convolution over NHWC 16-bit storage, vectorised over channels (conv_kernels.h,
// depthwise_conv2d_nhwc_vec8; depthwise_conv2d_nhwc takes it where it applies unless
// KILNRT_CUDA_DW_VEC=0). Each thread computes 8 consecutive channels (one 16-byte load / store per pixel) of a
// strip of TX outputs along x: with stride S = 1 or 2 and dilation 1 the kernel row's KW (3/5/7) weights stay in
// registers and each of the (TX - 1) * S + KW input columns of the strip's window is loaded once and used by every
// output of the strip that covers it; strip_width picks TX. Other strides / dilations / kernel widths: one output
// per thread, still 8 channels per load. float32 accumulation, one rounding per output (as the scalar kernel in
// nhwc_depthwise.cu, the path for C % 8 != 0 or misaligned pointers).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>

#include "ops/nn/conv/cuda/conv_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;

__device__ __forceinline__ void load8(const __half* p, float* v) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float* v) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void store8(__half* p, const float* v) {
  uint4 u;
  __half2* h = reinterpret_cast<__half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float* v) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}

// Stride S (1 or 2), dilation 1, KW known at compile time: thread = (n, oy, strip of TX outputs, 8-channel group).
// The strip's window row is (TX - 1) * S + KW input columns, each loaded once and used by every output covering it.
// int32 index math: the launcher takes this path only when every element index fits (fits32).
template <typename T, int KW, int S, int TX>
__global__ void __launch_bounds__(kThreads) dw_nhwc_strip_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                                 T* __restrict__ y, Conv2d p, int strips, int total) {
  const int groups = static_cast<int>(p.c / 8), h = static_cast<int>(p.h), wd = static_cast<int>(p.w);
  const int c = static_cast<int>(p.c), oh = static_cast<int>(p.oh), ow = static_cast<int>(p.ow);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int g = i % groups;
    int r = i / groups;
    const int ox0 = (r % strips) * TX;
    r /= strips;
    const int oy = r % oh;
    const int b = r / oh;
    float acc[TX][8];
#pragma unroll
    for (int t = 0; t < TX; ++t)
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[t][k] = 0.f;
    const T* img = x + static_cast<int64_t>(b) * h * wd * c + g * 8;
    const int ix0 = ox0 * S - static_cast<int>(p.pw);
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = oy * S - static_cast<int>(p.ph) + ky;
      if (iy < 0 || iy >= h) continue;
      float wv[KW][8];
#pragma unroll
      for (int kx = 0; kx < KW; ++kx) load8(w + (ky * KW + kx) * c + g * 8, wv[kx]);
      const T* row = img + iy * wd * c;
#pragma unroll
      for (int j = 0; j < (TX - 1) * S + KW; ++j) {
        const int ix = ix0 + j;
        if (ix < 0 || ix >= wd) continue;
        float v[8];
        load8(row + ix * c, v);
#pragma unroll
        for (int t = 0; t < TX; ++t) {
          const int kx = j - t * S;
          if (kx < 0 || kx >= KW) continue;  // resolved at compile time (j, t, KW, S unrolled)
#pragma unroll
          for (int k = 0; k < 8; ++k) acc[t][k] = fmaf(v[k], wv[kx][k], acc[t][k]);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < TX; ++t)
      if (ox0 + t < ow) store8(y + ((static_cast<int64_t>(b) * oh + oy) * ow + ox0 + t) * c + g * 8, acc[t]);
  }
}

// Any stride / dilation / kernel size: thread = (n, oy, ox, 8-channel group).
template <typename T>
__global__ void dw_nhwc_general_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, Conv2d p,
                                       int64_t total) {
  const int64_t groups = p.c / 8;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t g = i % groups;
    int64_t r = i / groups;
    const int64_t ox = r % p.ow;
    r /= p.ow;
    const int64_t oy = r % p.oh;
    const int64_t b = r / p.oh;
    float acc[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[c] = 0.f;
    const T* img = x + b * p.h * p.w * p.c + g * 8;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        float v[8], wv[8];
        load8(img + (iy * p.w + ix) * p.c, v);
        load8(w + (int64_t(ky) * p.kw + kx) * p.c + g * 8, wv);
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[c] = fmaf(v[c], wv[c], acc[c]);
      }
    }
    store8(y + ((b * p.oh + oy) * p.ow + ox) * p.c + g * 8, acc);
  }
}

// Outputs per thread along x of the strip kernels. Wider strips reuse more of each loaded input column but give
// fewer threads: the widest of 4 (stride 1) / 2 (stride 2), 2, 1 that still gives kMinThreads threads (H100 fp16
// b32: strips of 4 best for 7x7 stride 1, 2 for stride 2; small layers, e.g. batch 1, need the threads more; measured
// 2026-11-22, figures in bench/results/README.md). KILNRT_CUDA_DW_TX=1/2/4/8 forces a width (a knob for
// benchmarks and tests).
constexpr int64_t kMinThreads = 24 * 1024;

int forced_strip_width() {
  static const int tx = [] {
    const char* env = std::getenv("KILNRT_CUDA_DW_TX");
    const int v = env ? std::atoi(env) : 0;
    return v == 1 || v == 2 || v == 4 || v == 8 ? v : 0;
  }();
  return tx;
}

int strip_width(const Conv2d& p, int stride) {
  if (const int forced = forced_strip_width()) return forced;
  auto threads = [&](int tx) { return p.n * p.oh * ((p.ow + tx - 1) / tx) * (p.c / 8); };
  for (int tx = stride == 1 ? 4 : 2; tx > 1; tx /= 2)
    if (threads(tx) >= kMinThreads) return tx;
  return 1;
}

template <typename T, int KW, int S, int TX>
void launch_strip(const T* x, const T* w, T* y, const Conv2d& p, cudaStream_t s) {
  const int strips = static_cast<int>((p.ow + TX - 1) / TX);
  const int total = static_cast<int>(p.n * p.oh * strips * (p.c / 8));
  dw_nhwc_strip_kernel<T, KW, S, TX><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, strips, total);
}

template <typename T, int KW, int S>
void launch_strip(const T* x, const T* w, T* y, const Conv2d& p, cudaStream_t s) {
  switch (strip_width(p, S)) {
    case 1: launch_strip<T, KW, S, 1>(x, w, y, p, s); break;
    case 2: launch_strip<T, KW, S, 2>(x, w, y, p, s); break;
    case 8: launch_strip<T, KW, S, 8>(x, w, y, p, s); break;
    default: launch_strip<T, KW, S, 4>(x, w, y, p, s); break;
  }
}

template <typename T, int S>
bool launch_strip_kw(const T* x, const T* w, T* y, const Conv2d& p, cudaStream_t s) {
  switch (p.kw) {
    case 3: launch_strip<T, 3, S>(x, w, y, p, s); return true;
    case 5: launch_strip<T, 5, S>(x, w, y, p, s); return true;
    case 7: launch_strip<T, 7, S>(x, w, y, p, s); return true;
    default: return false;
  }
}

// Every element index of x and y (and the weights) below 2^31 - 16: int32 index math in the strip kernels.
bool fits32(const Conv2d& p) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 16;
  return p.n * p.h * p.w * p.c < kMax && p.n * p.oh * p.ow * p.c < kMax && int64_t(p.kh) * p.kw * p.c < kMax;
}

template <typename T>
int launch(const T* x, const T* w, T* y, const Conv2d& p, cudaStream_t s) {
  const bool strip = p.dh == 1 && p.dw == 1 && p.sh == p.sw && (p.sh == 1 || p.sh == 2) && fits32(p);
  bool done = false;
  if (strip && p.sh == 1)
    done = launch_strip_kw<T, 1>(x, w, y, p, s);
  else if (strip)
    done = launch_strip_kw<T, 2>(x, w, y, p, s);
  if (!done) {
    const int64_t total = p.n * p.oh * p.ow * (p.c / 8);
    dw_nhwc_general_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, total);
  }
  return launch_common::launch_status();
}

using launch_common::aligned16;

}  // namespace

bool depthwise_conv2d_nhwc_vec8_applies(const void* x, const void* w, const void* y, const Conv2d& p) {
  return p.c % 8 == 0 && p.k == p.c && p.groups == p.c && aligned16(x) && aligned16(w) && aligned16(y);
}

int depthwise_conv2d_nhwc_vec8(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream) {
  if (p.n * p.oh * p.ow * p.c == 0) return 0;
  if (!depthwise_conv2d_nhwc_vec8_applies(x, w, y, p)) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 1: return launch(static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y), p, s);
    case 2:
      return launch(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w),
                    static_cast<__nv_bfloat16*>(y), p, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
