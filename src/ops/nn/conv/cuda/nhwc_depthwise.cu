// Depthwise 2-D convolution (group == C == K) over NHWC 16-bit storage (conv_kernels.h): one thread per output
// element, the channel the fastest index, so a warp reads consecutive channels of one input pixel and of one filter
// tap (weights stored [KH][KW][C]) at every tap. float32 accumulation. cuDNN's NHWC depthwise kernels measured
// 3-4x slower than its NCHW ones on the H100 (convnext_tiny 7x7, docs/conv-fusion.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <string>

#include "ops/nn/conv/cuda/conv_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "core/env_switch.h"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void depthwise_nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, Conv2d p) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t c = i % p.c;
    const int64_t ox = (i / p.c) % p.ow;
    const int64_t oy = (i / (p.c * p.ow)) % p.oh;
    const int64_t b = i / (p.c * p.ow * p.oh);
    const T* img = x + b * p.h * p.w * p.c + c;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        acc += to_float(img[(iy * p.w + ix) * p.c]) * to_float(w[(int64_t(ky) * p.kw + kx) * p.c + c]);
      }
    }
    store(y, i, acc);
  }
}

}  // namespace

bool depthwise_nhwc_vec_enabled() {
  // The 8-channel kernel where it applies (nhwc_depthwise_vec.cu) unless KILNRT_CUDA_DW_VEC=0.
  static const bool vec = !env_switched_off("KILNRT_CUDA_DW_VEC");
  return vec;
}

int depthwise_conv2d_nhwc(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream) {
  if (depthwise_nhwc_vec_enabled() && p.k == p.c && p.groups == p.c && depthwise_conv2d_nhwc_vec8_applies(x, w, y, p))
    return depthwise_conv2d_nhwc_vec8(dt, x, w, y, p, stream);
  return depthwise_conv2d_nhwc_scalar(dt, x, w, y, p, stream);
}

int depthwise_conv2d_nhwc_scalar(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  if (total == 0) return 0;
  if (p.k != p.c || p.groups != p.c) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 1:
      depthwise_nhwc_kernel<__half><<<blocks_for(total), kThreads, 0, s>>>(
          static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y), p);
      break;
    case 2:
      depthwise_nhwc_kernel<__nv_bfloat16><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(x),
                                                                                  static_cast<const __nv_bfloat16*>(w),
                                                                                  static_cast<__nv_bfloat16*>(y), p);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
