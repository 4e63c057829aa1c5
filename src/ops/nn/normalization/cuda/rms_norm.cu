// The RMSNormalization kernel (rms_norm_kernels.h), in its CPU reference's arithmetic (double accumulation in the
// reference's order, the same float roundings), so that results match it to the last bit or nearly (FMA contraction and
// the device exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/normalization/cuda/rms_norm_kernels.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- RMSNormalization: one block per row, double sum of squares
// --------------------------------------------------------
constexpr int kNormThreads = 256;

__device__ double block_sum(double v, double* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const double total = shared[0];
  __syncthreads();
  return total;
}

__device__ __forceinline__ int64_t scale_offset(const RmsNormArgs& a, int64_t i) {
  int64_t off = 0;
  for (int d = a.norm_rank - 1; d >= 0; --d) {
    off += (i % a.norm_dims[d]) * a.scale_strides[d];
    i /= a.norm_dims[d];
  }
  return off;
}

__global__ void rms_norm_kernel(RmsNormArgs a) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const float* xs = a.x + r * a.len;
    float* ys = a.y + r * a.len;
    double sq = 0.0;
    for (int64_t i = threadIdx.x; i < a.len; i += blockDim.x) sq += static_cast<double>(xs[i]) * xs[i];
    sq = block_sum(sq, shared);
    const double inv = 1.0 / sqrt((a.len > 0 ? sq / static_cast<double>(a.len) : 0.0) + a.eps);
    for (int64_t i = threadIdx.x; i < a.len; i += blockDim.x)
      ys[i] = static_cast<float>(xs[i] * inv * a.scale[scale_offset(a, i)]);
  }
}

}  // namespace

int rms_norm(const RmsNormArgs& a, StreamT stream) {
  if (a.rows <= 0 || a.len <= 0) return 0;
  if (a.norm_rank > kMaxNormDims) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t blocks = a.rows < 65535LL * 16 ? a.rows : 65535LL * 16;
  rms_norm_kernel<<<static_cast<unsigned>(blocks), kNormThreads, 0, stream>>>(a);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::linatt
