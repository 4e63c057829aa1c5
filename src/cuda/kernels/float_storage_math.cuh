// Device helpers shared by the row / channel kernels of the reductions, softmax, layer norm, BatchNormalization's
// per-channel affine and 2-D pooling (included by .cu files only): float32 math over float32 / float16 / bfloat16
// storage, a block-wide sum / max, and the storage-dtype switch of their launchers.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kilnrt::cuda::kernels {
namespace {

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

}  // namespace
}  // namespace kilnrt::cuda::kernels

// dt: 0 float32, 1 float16, 2 bfloat16 (the only dtype switch; one instantiation per storage type).
#define KILNRT_DT_SWITCH(dt, ...)                            \
  switch (dt) {                                              \
    case 0: {                                                \
      using T = float;                                       \
      __VA_ARGS__;                                           \
      break;                                                 \
    }                                                        \
    case 1: {                                                \
      using T = __half;                                      \
      __VA_ARGS__;                                           \
      break;                                                 \
    }                                                        \
    case 2: {                                                \
      using T = __nv_bfloat16;                               \
      __VA_ARGS__;                                           \
      break;                                                 \
    }                                                        \
    default: return static_cast<int>(cudaErrorInvalidValue); \
  }
