// Reduction over the middle dim of [outer, r, inner] with a wide inner dim (reduce_kernels.h), the shape of a spatial
// mean over NHWC storage ([N, H*W, C]): a block of 32 x 32 threads per (outer, 32 consecutive inner indices); the
// 32 rows of the block stride over r (each warp reads 32 consecutive elements), then combine in shared memory.
// The generic column kernel (reduce.cu) gives one thread the whole of r, too few threads for early CNN stages.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/reduce/reductions/cuda/reduce_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
__device__ __forceinline__ void put(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void put(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// op: 0 sum, 1 mean, 2 max, 3 min (NaN propagates through max / min).
__device__ __forceinline__ float combine(int op, float a, float b) {
  if (op == 2) return (a != a || a > b) ? a : b;
  if (op == 3) return (a != a || a < b) ? a : b;
  return a + b;
}

template <typename T>
__global__ void reduce_mid_kernel(int op, const T* __restrict__ x, T* __restrict__ y, int64_t r, int64_t inner) {
  __shared__ float part[32][33];
  const int64_t col = blockIdx.x * 32 + threadIdx.x;
  const int64_t o = blockIdx.y;
  float acc = op == 2 ? -INFINITY : (op == 3 ? INFINITY : 0.f);
  if (col < inner) {
    const T* p = x + o * r * inner + col;
    for (int64_t k = threadIdx.y; k < r; k += 32) acc = combine(op, acc, as_float(p[k * inner]));
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < inner) {
    float v = part[0][threadIdx.x];
    for (int k = 1; k < 32; ++k) v = combine(op, v, part[k][threadIdx.x]);
    if (op == 1) v /= float(r);
    put(y + o * inner + col, v);
  }
}

}  // namespace

int reduce_mid_wide(int op, int dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner, StreamT stream) {
  if (outer * inner == 0) return 0;
  if (op < 0 || op > 3 || r < 1 || outer > 65535) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>((inner + 31) / 32), static_cast<unsigned>(outer));
  const dim3 block(32, 32);
  switch (dt) {
    case 0: reduce_mid_kernel<float><<<grid, block, 0, s>>>(op, (const float*)x, (float*)y, r, inner); break;
    case 1: reduce_mid_kernel<__half><<<grid, block, 0, s>>>(op, (const __half*)x, (__half*)y, r, inner); break;
    case 2:
      reduce_mid_kernel<__nv_bfloat16><<<grid, block, 0, s>>>(op, (const __nv_bfloat16*)x, (__nv_bfloat16*)y, r, inner);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
