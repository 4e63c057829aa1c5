// 2-D max / average pooling over NHWC storage (pool2d_kernels.h, pool2d_nhwc_kernels.h). Two kernels:
//  - vec8 (16-bit storage, C % 8 == 0, 16-byte aligned x and y): one thread per 8 channels of kTx outputs along x,
//    16-byte loads and stores, 32-bit index math (the scalar kernel's four 64-bit divisions per element were most
//    of its time: resnet50's 3x3/2 pool at b32 took 0.20 ms for ~64 MB of traffic);
//  - scalar: one thread per output element, the channel the fastest index (any C, float32 too).
// Same semantics in both (pool2d in pool2d.cu): float32 math; NaN propagates through max, count_include_pad counts
// padding inside the padded input only, a window without input gives -inf for max and 0 for average.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/pool/cuda/pool2d_kernels.h"
#include "ops/nn/pool/cuda/pool2d_nhwc_kernels.h"

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

// ---- 8 channels per thread -------------------------------------------------------------------------------------
__device__ __forceinline__ void unpack8(const uint4& u, float* f, __half) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __half22float2(h[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}
__device__ __forceinline__ void unpack8(const uint4& u, float* f, __nv_bfloat16) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __bfloat162float(h[i].x);
    f[2 * i + 1] = __bfloat162float(h[i].y);
  }
}
__device__ __forceinline__ uint4 pack8(const float* f, __half) {
  uint4 u;
  __half2* h = reinterpret_cast<__half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
  return u;
}
__device__ __forceinline__ uint4 pack8(const float* f, __nv_bfloat16) {
  uint4 u;
  __nv_bfloat16* h = reinterpret_cast<__nv_bfloat16*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = __float2bfloat16_rn(f[i]);
  return u;
}

// Thread i: channel group g = i % cg (8 channels), then kTx consecutive outputs along x of one output row.
template <typename T, int kTx>
__global__ void pool2d_nhwc_vec8_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, Pool2d p, int cg, int owb,
                                        int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int g = i % cg;
  int rest = i / cg;
  const int ox0 = (rest % owb) * kTx;
  rest /= owb;
  const int oh = static_cast<int>(p.oh), ow = static_cast<int>(p.ow), h = static_cast<int>(p.h),
            w = static_cast<int>(p.w);
  const int oy = rest % oh;
  const int b = rest / oh;
  const uint4* img = x + int64_t(b) * h * w * cg + g;
  float acc[kTx][8];
  int count[kTx];
#pragma unroll
  for (int t = 0; t < kTx; ++t) {
    count[t] = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[t][j] = p.max ? -INFINITY : 0.f;
  }
  for (int ky = 0; ky < p.kh; ++ky) {
    const int iy = oy * p.sh - p.ph + ky * p.dh;
    const bool row_in = iy >= 0 && iy < h;
    const bool row_padded = iy < h + p.ph;
    for (int kx = 0; kx < p.kw; ++kx) {
#pragma unroll
      for (int t = 0; t < kTx; ++t) {
        const int ix = (ox0 + t) * p.sw - p.pw + kx * p.dw;
        const bool inside = row_in && ix >= 0 && ix < w;
        if (inside) {
          float v[8];
          unpack8(img[(int64_t(iy) * w + ix) * cg], v, T());
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if (p.max)
              acc[t][j] = (acc[t][j] != acc[t][j] || acc[t][j] > v[j]) ? acc[t][j] : v[j];
            else
              acc[t][j] += v[j];
          }
        }
        if (inside || (p.count_include_pad && row_padded && ix < w + p.pw)) ++count[t];
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kTx; ++t) {
    const int ox = ox0 + t;
    if (ox >= ow) break;
    if (!p.max) {
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[t][j] = count[t] > 0 ? acc[t][j] / float(count[t]) : 0.f;
    }
    y[((int64_t(b) * oh + oy) * ow + ox) * cg + g] = pack8(acc[t], T());
  }
}

template <typename T>
int launch_vec8(const void* x, void* y, const Pool2d& p, int tx, cudaStream_t s) {
  const int cg = static_cast<int>(p.c / 8);
  const int owb = static_cast<int>((p.ow + tx - 1) / tx);
  const int total = static_cast<int>(p.n * p.oh * owb * cg);
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  const uint4* xv = static_cast<const uint4*>(x);
  uint4* yv = static_cast<uint4*>(y);
  if (tx == 4)
    pool2d_nhwc_vec8_kernel<T, 4><<<blocks, kThreads, 0, s>>>(xv, yv, p, cg, owb, total);
  else if (tx == 2)
    pool2d_nhwc_vec8_kernel<T, 2><<<blocks, kThreads, 0, s>>>(xv, yv, p, cg, owb, total);
  else
    pool2d_nhwc_vec8_kernel<T, 1><<<blocks, kThreads, 0, s>>>(xv, yv, p, cg, owb, total);
  return launch_common::launch_status();
}

}  // namespace

bool pool2d_nhwc_vec_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILNRT_CUDA_POOL_VEC");
    return !(e && e[0] == '0' && e[1] == 0);
  }();
  return on;
}

bool pool2d_nhwc_vec8_applies(int dt, const void* x, const void* y, const Pool2d& p) {
  const auto aligned = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15) == 0; };
  // 32-bit index math: every index below 2^31 (8-channel groups; x's image offset is 64-bit).
  const int64_t groups_out = p.n * p.oh * p.ow * (p.c / 8), groups_in_img = p.h * p.w * (p.c / 8);
  return (dt == 1 || dt == 2) && p.c > 0 && p.c % 8 == 0 && aligned(x) && aligned(y) &&
         groups_out < (int64_t(1) << 30) && groups_in_img < (int64_t(1) << 30) && p.h < (1 << 30) && p.w < (1 << 30);
}

int pool2d_nhwc_vec8(int dt, const void* x, void* y, const Pool2d& p, int tx, StreamT stream) {
  if (p.n * p.oh * p.ow * p.c == 0) return 0;
  if (!pool2d_nhwc_vec8_applies(dt, x, y, p)) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (tx != 1 && tx != 2 && tx != 4) tx = 2;
  return dt == 1 ? launch_vec8<__half>(x, y, p, tx, s) : launch_vec8<__nv_bfloat16>(x, y, p, tx, s);
}

int pool2d_nhwc(int dt, const void* x, void* y, const Pool2d& p, StreamT stream) {
  if (pool2d_nhwc_vec_enabled() && pool2d_nhwc_vec8_applies(dt, x, y, p))
    return pool2d_nhwc_vec8(dt, x, y, p, p.ow >= 16 ? 2 : 1, stream);
  return pool2d_nhwc_scalar(dt, x, y, p, stream);
}

int pool2d_nhwc_scalar(int dt, const void* x, void* y, const Pool2d& p, StreamT stream) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  if (total == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: pool2d_nhwc_kernel<float><<<blocks_for(total), kThreads, 0, s>>>((const float*)x, (float*)y, p); break;
    case 1: pool2d_nhwc_kernel<__half><<<blocks_for(total), kThreads, 0, s>>>((const __half*)x, (__half*)y, p); break;
    case 2:
      pool2d_nhwc_kernel<__nv_bfloat16>
          <<<blocks_for(total), kThreads, 0, s>>>((const __nv_bfloat16*)x, (__nv_bfloat16*)y, p);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
