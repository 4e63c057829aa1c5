// MeanVarianceNormalization kernel (mvn_kernels.h): one block per group, float32 data with double statistics like
// the CPU reference.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/math/linalg/cuda/mvn_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// Flat offset of element j of group g: g enumerates the unflagged dims, j the flagged ones (both row-major).
__device__ int64_t mvn_offset(const DimsMask& s, int64_t g, int64_t j) {
  int64_t off = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t c;
    if (s.flag[d]) {
      c = j % s.d[d];
      j /= s.d[d];
    } else {
      c = g % s.d[d];
      g /= s.d[d];
    }
    off += c * stride;
    stride *= s.d[d];
  }
  return off;
}

__global__ void mvn_kernel(const float* x, float* y, DimsMask s, int64_t groups, int64_t count) {
  __shared__ double sum_sh[kThreads], sq_sh[kThreads];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    double sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const double v = x[mvn_offset(s, g, j)];
      sum += v;
      sq += v * v;
    }
    sum_sh[threadIdx.x] = sum;
    sq_sh[threadIdx.x] = sq;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (static_cast<int>(threadIdx.x) < w) {
        sum_sh[threadIdx.x] += sum_sh[threadIdx.x + w];
        sq_sh[threadIdx.x] += sq_sh[threadIdx.x + w];
      }
      __syncthreads();
    }
    const double mean = sum_sh[0] / static_cast<double>(count);
    const double var = sq_sh[0] / static_cast<double>(count) - mean * mean;
    const double denom = sqrt(var > 0 ? var : 0.0) + 1e-9;
    __syncthreads();  // everybody has read sum_sh[0] / sq_sh[0] before the next group overwrites them
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t off = mvn_offset(s, g, j);
      y[off] = static_cast<float>((static_cast<double>(x[off]) - mean) / denom);
    }
  }
}

}  // namespace

int mvn_f32(const float* x, float* y, const DimsMask& shape, int64_t groups, int64_t count, StreamT stream) {
  if (groups <= 0 || count <= 0) return 0;
  const unsigned blocks = static_cast<unsigned>(groups < 65535 ? groups : 65535);
  mvn_kernel<<<blocks, kThreads, 0, stream>>>(x, y, shape, groups, count);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
