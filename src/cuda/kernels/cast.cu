// kernels::cast (the Cast layer, the executor's dtype conversions) and the float32 <-> 16-bit conversions of whole
// tensors, kernels::f32_to_16 / f16_to_32 (graph inputs / outputs of --fp16 / --bf16 engines, float32 islands, 16-bit
// GEMM operands). Declared in kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ __forceinline__ double load_as_double(const void* p, int t, int64_t i) {
  switch (t) {
    case 0: return static_cast<const float*>(p)[i];
    case 1: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case 2: return static_cast<const int32_t*>(p)[i];
    case 3: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    case 4: return static_cast<const int8_t*>(p)[i];
    case 5: return static_cast<const uint8_t*>(p)[i];
    case 6: return static_cast<const double*>(p)[i];
    case 8: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return __half2float(static_cast<const __half*>(p)[i]);
  }
}

__device__ __forceinline__ int64_t to_int(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

__global__ void cast_kernel(const void* x, int from, void* y, int to, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (from == 1 && (to == 1 || to == 2 || to == 3 || to == 4 || to == 5)) {  // exact integer paths
      const int64_t v = static_cast<const int64_t*>(x)[i];
      switch (to) {
        case 1: static_cast<int64_t*>(y)[i] = v; break;
        case 2: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(v); break;
        case 3: static_cast<uint8_t*>(y)[i] = v != 0; break;
        case 4: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v); break;
        default: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v); break;
      }
      continue;
    }
    const double v = load_as_double(x, from, i);
    switch (to) {
      case 0: static_cast<float*>(y)[i] = static_cast<float>(v); break;
      case 1: static_cast<int64_t*>(y)[i] = to_int(v); break;
      case 2: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(to_int(v)); break;
      case 3: static_cast<uint8_t*>(y)[i] = v != 0.0; break;
      case 4: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(to_int(v)); break;
      case 5: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(to_int(v)); break;
      case 6: static_cast<double*>(y)[i] = v; break;
      case 8: static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
      default: static_cast<__half*>(y)[i] = __float2half_rn(static_cast<float>(v)); break;
    }
  }
}

}  // namespace

int cast(const void* x, int from, void* y, int to, int64_t n, StreamT stream) {
  if (n == 0) return 0;
  // float32 <-> 16-bit floats: the direct conversion kernels (same rounding as the generic path's double detour,
  // which is exact for float32 sources), no per-element type switch.
  if (from == 0 && (to == 7 || to == 8)) return f32_to_16(static_cast<const float*>(x), y, n, to == 8, stream);
  if ((from == 7 || from == 8) && to == 0) return f16_to_32(x, static_cast<float*>(y), n, from == 8, stream);
  cast_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(x, from, y, to, n);
  return launch_status();
}

namespace {
// float32 <-> 16-bit conversions of whole tensors (graph inputs / outputs of 16-bit engines, float32 islands). The
// vector kernels move 8 values per thread (two 16-byte float32 loads, one 16-byte 16-bit store, or the reverse) when
// both pointers are 16-byte aligned; the tail past the last multiple of 8, or misaligned pointers, take the scalar
// kernel. One thread per vector, no grid-stride loop: a 224x224 batch-32 image (4.8 M values) is 602 K threads.
using storage16::from_f;  // storage16.cuh
using storage16::to_f;

template <class H>
__global__ void f32_to_16_vec_kernel(const float4* __restrict__ x, uint4* __restrict__ y, int64_t nvec) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  const float4 a = x[2 * i], b = x[2 * i + 1];
  union {
    uint4 u;
    H h[8];
  } o;
  o.h[0] = from_f<H>(a.x);
  o.h[1] = from_f<H>(a.y);
  o.h[2] = from_f<H>(a.z);
  o.h[3] = from_f<H>(a.w);
  o.h[4] = from_f<H>(b.x);
  o.h[5] = from_f<H>(b.y);
  o.h[6] = from_f<H>(b.z);
  o.h[7] = from_f<H>(b.w);
  y[i] = o.u;
}
template <class H>
__global__ void f16_to_32_vec_kernel(const uint4* __restrict__ x, float4* __restrict__ y, int64_t nvec) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  union {
    uint4 u;
    H h[8];
  } v;
  v.u = x[i];
  y[2 * i] = make_float4(to_f(v.h[0]), to_f(v.h[1]), to_f(v.h[2]), to_f(v.h[3]));
  y[2 * i + 1] = make_float4(to_f(v.h[4]), to_f(v.h[5]), to_f(v.h[6]), to_f(v.h[7]));
}
__global__ void f32_to_16_kernel(const float* x, void* y, int64_t n, int bf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (bf16)
      static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(x[i]);
    else
      static_cast<__half*>(y)[i] = __float2half_rn(x[i]);
  }
}
__global__ void f16_to_32_kernel(const void* x, float* y, int64_t n, int bf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(x)[i])
                : __half2float(static_cast<const __half*>(x)[i]);
}
unsigned conv_blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 65535 ? b : 65535);
}
constexpr int64_t kMaxVecBlocks = 2147483647LL;
}  // namespace

int f32_to_16(const float* x, void* y, int64_t n, int bf16, StreamT stream) {
  if (n <= 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t done = 0;
  const int64_t nvec = n / 8, blocks = (nvec + 255) / 256;
  if (nvec > 0 && blocks <= kMaxVecBlocks && aligned16(x) && aligned16(y)) {
    if (bf16)
      f32_to_16_vec_kernel<__nv_bfloat16>
          <<<unsigned(blocks), 256, 0, s>>>(reinterpret_cast<const float4*>(x), static_cast<uint4*>(y), nvec);
    else
      f32_to_16_vec_kernel<__half>
          <<<unsigned(blocks), 256, 0, s>>>(reinterpret_cast<const float4*>(x), static_cast<uint4*>(y), nvec);
    done = nvec * 8;
  }
  if (done < n)
    f32_to_16_kernel<<<conv_blocks(n - done), 256, 0, s>>>(x + done, static_cast<char*>(y) + done * 2, n - done, bf16);
  return static_cast<int>(cudaGetLastError());
}
int f16_to_32(const void* x, float* y, int64_t n, int bf16, StreamT stream) {
  if (n <= 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t done = 0;
  const int64_t nvec = n / 8, blocks = (nvec + 255) / 256;
  if (nvec > 0 && blocks <= kMaxVecBlocks && aligned16(x) && aligned16(y)) {
    if (bf16)
      f16_to_32_vec_kernel<__nv_bfloat16>
          <<<unsigned(blocks), 256, 0, s>>>(static_cast<const uint4*>(x), reinterpret_cast<float4*>(y), nvec);
    else
      f16_to_32_vec_kernel<__half>
          <<<unsigned(blocks), 256, 0, s>>>(static_cast<const uint4*>(x), reinterpret_cast<float4*>(y), nvec);
    done = nvec * 8;
  }
  if (done < n)
    f16_to_32_kernel<<<conv_blocks(n - done), 256, 0, s>>>(static_cast<const char*>(x) + done * 2, y + done, n - done,
                                                           bf16);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kilnrt::cuda::kernels
