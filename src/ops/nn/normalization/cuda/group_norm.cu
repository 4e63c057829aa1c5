// GroupNormalization / InstanceNormalization kernel of float32 (group_norm_kernels.h): one block per (n, group) row.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/normalization/cuda/group_norm_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// One block per (n, group) row.
__global__ void group_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t channels,
                                  int64_t spatial, int64_t groups, bool per_channel, float eps) {
  const int64_t row = blockIdx.x;
  const int64_t cpg = channels / groups, len = cpg * spatial;
  const int64_t g = row % groups;
  const float* p = x + row * len;
  float* q = y + row * len;
  __shared__ float s_sum[kThreads], s_sq[kThreads];
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += p[j];
  s_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
    __syncthreads();
  }
  const float mean = s_sum[0] / float(len);
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float d = p[j] - mean;
    sq += d * d;
  }
  s_sq[threadIdx.x] = sq;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(s_sq[0] / float(len) + eps);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const int64_t ch = g * cpg + j / spatial;
    const int64_t si = per_channel ? ch : g;
    const float a = scale ? scale[si] : 1.f, b = bias ? bias[si] : 0.f;
    q[j] = (p[j] - mean) * inv * a + b;
  }
}

}  // namespace

int group_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                   int64_t spatial, int64_t groups, bool per_channel, float eps, StreamT stream) {
  if (n * channels * spatial <= 0) return 0;
  if (groups <= 0 || channels % groups != 0 || n * groups > 0x7fffffffLL)
    return static_cast<int>(cudaErrorInvalidValue);
  group_norm_kernel<<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, scale, bias, y, channels, spatial,
                                                                                groups, per_channel, eps);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
