// Element access shared by the generic elementwise kernels of several op folders (unary, binary, Where, Gemm's C
// broadcast; included by .cu files only): float32 loads / stores of float32, float16 and bfloat16 storage (float32
// math) and the element offsets of the three operands of a Broadcast3 for a flat output index.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

__device__ __forceinline__ float ldf(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ldf(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ldf(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void stf(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void stf(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void stf(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ void offsets3(const Broadcast3& bc, int64_t i, int64_t& o0, int64_t& o1, int64_t& o2) {
  if (bc.contiguous_same) {
    o0 = o1 = o2 = i;
    return;
  }
  o0 = o1 = o2 = 0;
  int64_t rem = i;
  for (int d = bc.rank - 1; d >= 0; --d) {
    const int64_t idx = rem % bc.dims[d];
    rem /= bc.dims[d];
    o0 += idx * bc.s0[d];
    o1 += idx * bc.s1[d];
    o2 += idx * bc.s2[d];
  }
}

}  // namespace
}  // namespace kilnrt::cuda::kernels
