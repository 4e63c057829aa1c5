// Depthwise 2-D convolution over NHWC 16-bit storage, vectorised over channels (conv_kernels.h,
// depthwise_conv2d_nhwc_vec8; issue 7's depthwise gap; not yet run on a GPU, so depthwise_conv2d_nhwc takes it only
// with KILNRT_CUDA_DW_VEC=1). Each thread computes 8 consecutive
// channels (one 16-byte load / store per pixel) of a strip of kTx outputs along x: with stride 1 and dilation 1 the
// kernel row's KW weights stay in registers and every input column of the strip's window is loaded once and used
// by every output of the strip that covers it (KW + kTx - 1 loads instead of KW x kTx). Other strides / dilations:
// one output per thread, still 8 channels per load. float32 accumulation, one rounding per output (as the scalar
// kernel in nhwc_depthwise.cu, which remains the path for C % 8 != 0 or misaligned pointers).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/kernels/conv_kernels.h"
#include "backends/cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;

constexpr int kTx = 4;  // outputs along x per thread (unit-stride path)

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

// Stride 1, dilation 1, KW known at compile time: thread = (n, oy, strip of kTx outputs, 8-channel group).
template <typename T, int KW>
__global__ void dw_nhwc_unit_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, Conv2d p,
                                    int64_t strips, int64_t total) {
  const int64_t groups = p.c / 8;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t g = i % groups;
    int64_t r = i / groups;
    const int64_t ox0 = (r % strips) * kTx;
    r /= strips;
    const int64_t oy = r % p.oh;
    const int64_t b = r / p.oh;
    float acc[kTx][8];
#pragma unroll
    for (int t = 0; t < kTx; ++t)
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[t][c] = 0.f;
    const T* img = x + b * p.h * p.w * p.c + g * 8;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy - p.ph + ky;
      if (iy < 0 || iy >= p.h) continue;
      float wv[KW][8];
#pragma unroll
      for (int kx = 0; kx < KW; ++kx) load8(w + (int64_t(ky) * KW + kx) * p.c + g * 8, wv[kx]);
      const T* row = img + iy * p.w * p.c;
#pragma unroll
      for (int j = 0; j < KW + kTx - 1; ++j) {
        const int64_t ix = ox0 - p.pw + j;
        if (ix < 0 || ix >= p.w) continue;
        float v[8];
        load8(row + ix * p.c, v);
#pragma unroll
        for (int t = 0; t < kTx; ++t) {
          const int kx = j - t;
          if (kx < 0 || kx >= KW) continue;  // resolved at compile time (j, t, KW unrolled)
#pragma unroll
          for (int c = 0; c < 8; ++c) acc[t][c] = fmaf(v[c], wv[kx][c], acc[t][c]);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kTx; ++t)
      if (ox0 + t < p.ow) store8(y + ((b * p.oh + oy) * p.ow + ox0 + t) * p.c + g * 8, acc[t]);
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

template <typename T>
int launch(const T* x, const T* w, T* y, const Conv2d& p, cudaStream_t s) {
  const bool unit = p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1;
  const int64_t groups = p.c / 8;
  if (unit && (p.kw == 3 || p.kw == 5 || p.kw == 7)) {
    const int64_t strips = (p.ow + kTx - 1) / kTx;
    const int64_t total = p.n * p.oh * strips * groups;
    if (p.kw == 3) dw_nhwc_unit_kernel<T, 3><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, strips, total);
    else if (p.kw == 5) dw_nhwc_unit_kernel<T, 5><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, strips, total);
    else dw_nhwc_unit_kernel<T, 7><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, strips, total);
  } else {
    const int64_t total = p.n * p.oh * p.ow * groups;
    dw_nhwc_general_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(x, w, y, p, total);
  }
  return launch_common::launch_status();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool depthwise_conv2d_nhwc_vec8_applies(const void* x, const void* w, const void* y, const Conv2d& p) {
  return p.c % 8 == 0 && p.k == p.c && p.groups == p.c && aligned16(x) && aligned16(w) && aligned16(y);
}

int depthwise_conv2d_nhwc_vec8(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream) {
  if (p.n * p.oh * p.ow * p.c == 0) return 0;
  if (!depthwise_conv2d_nhwc_vec8_applies(x, w, y, p)) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 1:
      return launch(static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y), p, s);
    case 2:
      return launch(static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w),
                    static_cast<__nv_bfloat16*>(y), p, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
