// 16-bit storage helpers shared by the kernels of this folder (included by .cu files only): float32 <-> float16 /
// bfloat16 (/ float32) conversions and a 16-byte vector of elements.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace kilnrt::cuda::kernels::storage16 {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// 16 bytes of T: one vector load / store.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
  T e[kN];
};

}  // namespace kilnrt::cuda::kernels::storage16
