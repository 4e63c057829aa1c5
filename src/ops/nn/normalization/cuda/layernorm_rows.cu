// LayerNormalization over rows of n values (layernorm.h: layernorm): the vectorized kernel (layernorm.cu) where it
// applies, else one warp per row (n <= 1024) or one block per row; statistics in float32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/float_storage_math.cuh"
#include "ops/nn/normalization/cuda/layernorm.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// Mean and variance in float32 from the loaded values (two passes): no 16-bit overflow of sums of squares.
template <typename T>
__global__ void layernorm_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out, float* inv_std_out,
                                 int64_t n, float eps) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* out = y + blockIdx.x * n;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += ld(row, i);
  const float mean = block_reduce<false>(s, shared) / float(n);
  float v = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = ld(row, i) - mean;
    v += d * d;
  }
  const float var = block_reduce<false>(v, shared) / float(n);
  const float inv_std = 1.f / sqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float r = (ld(row, i) - mean) * inv_std;
    if (scale) r *= ld(scale, i);
    if (bias) r += ld(bias, i);
    if (out) st(out, i, r);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_std_out) inv_std_out[blockIdx.x] = inv_std;
  }
}

// Rows of n <= 1024: one warp per row, the row held in registers (one global read), mean and variance from them.
constexpr int kLnWarpMax = 32;  // values per lane
template <typename T>
__global__ void layernorm_warp_kernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                                      float* inv_std_out, int64_t rows, int n, float eps) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = threadIdx.x & 31;
  const T* row = x + r * n;
  float v[kLnWarpMax];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const int c = lane + i * 32;
    v[i] = c < n ? ld(row, c) : 0.f;
    s += v[i];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float mean = s / float(n);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const float d = lane + i * 32 < n ? v[i] - mean : 0.f;
    q += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  const float inv_std = 1.f / sqrtf(q / float(n) + eps);
  T* out = y ? y + r * n : nullptr;
#pragma unroll
  for (int i = 0; i < kLnWarpMax; ++i) {
    const int c = lane + i * 32;
    if (c < n && out) {
      float t = (v[i] - mean) * inv_std;
      if (scale) t *= ld(scale, c);
      if (bias) t += ld(bias, c);
      st(out, c, t);
    }
  }
  if (lane == 0) {
    if (mean_out) mean_out[r] = mean;
    if (inv_std_out) inv_std_out[r] = inv_std;
  }
}

}  // namespace

int layernorm(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
              int64_t rows, int64_t n, float eps, StreamT stream) {
  if (rows == 0 || n == 0) return 0;
  if (rows >= 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  // 16-byte vectors, a group of lanes per row (layernorm.cu) when n and the pointers allow it; else the kernels below.
  const int vec = layernorm_vec(dt, x, scale, bias, y, mean, inv_std, rows, n, eps, stream);
  if (vec >= 0) return vec;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (n <= 32 * kLnWarpMax) {  // one warp per row, 8 rows per block
    const int64_t blocks = (rows + 7) / 8;
    if (blocks >= 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
    KILNRT_DT_SWITCH(
        dt, layernorm_warp_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, s>>>(
                (const T*)x, (const T*)scale, (const T*)bias, (T*)y, mean, inv_std, rows, static_cast<int>(n), eps))
    return launch_status();
  }
  KILNRT_DT_SWITCH(dt, layernorm_kernel<T><<<rows_grid(rows), n >= 1024 ? 512 : 128, 0, s>>>(
                           (const T*)x, (const T*)scale, (const T*)bias, (T*)y, mean, inv_std, n, eps))
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
