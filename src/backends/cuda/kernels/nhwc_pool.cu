// 2-D max / average pooling over NHWC storage (conv_kernels.h): one thread per output element, the channel the
// fastest index, so a warp reads 32 consecutive channels of one input pixel (coalesced) at every window position.
// Semantics as pool2d in nn.cu: NaN propagates through max, count_include_pad counts padding inside the padded
// input only, a window without input gives 0 for average.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/kernels/conv_kernels.h"
#include "backends/cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;

__device__ __forceinline__ float load_f(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_f(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void pool2d_nhwc_kernel(const T* x, T* y, Pool2d p) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t c = i % p.c;
    const int64_t ox = (i / p.c) % p.ow;
    const int64_t oy = (i / (p.c * p.ow)) % p.oh;
    const int64_t b = i / (p.c * p.ow * p.oh);
    const T* img = x + b * p.h * p.w * p.c + c;
    float acc = p.max ? -INFINITY : 0.f;
    int count = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
        const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
        if (p.max) {
          if (inside) {
            const float v = load_f(img, (iy * p.w + ix) * p.c);
            acc = (acc != acc || acc > v) ? acc : v;
          }
        } else {
          const bool in_padded = iy < p.h + p.ph && ix < p.w + p.pw;
          if (inside) acc += load_f(img, (iy * p.w + ix) * p.c);
          if (inside || (p.count_include_pad && in_padded)) ++count;
        }
      }
    }
    store_f(y, i, p.max ? acc : (count > 0 ? acc / float(count) : 0.f));
  }
}

}  // namespace

int pool2d_nhwc(int dt, const void* x, void* y, const Pool2d& p, StreamT stream) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  if (total == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: pool2d_nhwc_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float*)x, (float*)y, p); break;
    case 1: pool2d_nhwc_kernel<__half><<<blocks_for(total), kThreads, 0, s>>>((const __half*)x, (__half*)y, p); break;
    case 2:
      pool2d_nhwc_kernel<__nv_bfloat16><<<blocks_for(total), kThreads, 0, s>>>((const __nv_bfloat16*)x,
                                                                               (__nv_bfloat16*)y, p);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
