// NegativeLogLikelihoodLoss kernels of float32 (nll_loss_kernels.h): one thread per loss element without reduction,
// one block for a sum / mean.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/loss/cuda/nll_loss_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/dims_index.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
using dims_index::load_index;

__device__ __forceinline__ float nll_term(const float* logp, const void* target, bool t64, const float* w, int64_t c,
                                          int64_t inner, bool has_ignore, int64_t ignore, int64_t i, float* wt) {
  const int64_t b = i / inner, d = i % inner;
  const int64_t t = load_index(target, t64, i);
  if (has_ignore && t == ignore) {
    *wt = 0.f;
    return 0.f;
  }
  if (t < 0 || t >= c) {
    *wt = 0.f;
    return __int_as_float(0x7fc00000);
  }
  *wt = w ? w[t] : 1.f;
  return -logp[(b * c + t) * inner + d] * *wt;
}

__global__ void nll_none_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                int64_t c, int64_t inner, bool has_ignore, int64_t ignore) {
  KILNRT_GRID_LOOP(i, n * inner) {
    float wt;
    y[i] = nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
  }
}

// One block: the whole reduction (losses are small tensors: batch x spatial).
__global__ void nll_reduce_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                  int64_t c, int64_t inner, bool has_ignore, int64_t ignore, bool mean) {
  __shared__ double s_loss[kThreads], s_w[kThreads];
  double loss = 0.0, wsum = 0.0;
  for (int64_t i = threadIdx.x; i < n * inner; i += blockDim.x) {
    float wt;
    loss += nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
    wsum += wt;
  }
  s_loss[threadIdx.x] = loss;
  s_w[threadIdx.x] = wsum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      s_loss[threadIdx.x] += s_loss[threadIdx.x + s];
      s_w[threadIdx.x] += s_w[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[0] = mean ? float(s_loss[0] / s_w[0]) : float(s_loss[0]);
}

}  // namespace

int nll_loss_f32(const float* logp, const void* target, bool target_is_64, const float* weight, float* y, int64_t n,
                 int64_t c, int64_t inner, bool has_ignore, int64_t ignore_index, int reduction, StreamT stream) {
  if (reduction == 0) {
    if (n * inner <= 0) return 0;
    nll_none_kernel<<<blocks_for(n * inner), kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner,
                                                                    has_ignore, ignore_index);
  } else {
    nll_reduce_kernel<<<1, kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner, has_ignore,
                                                  ignore_index, reduction == 2);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
