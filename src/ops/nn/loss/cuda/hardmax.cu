// Hardmax kernel (hardmax_kernels.h): one thread per [outer, inner] position walks the reduced axis.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/loss/cuda/hardmax_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void hardmax_kernel(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  KILNRT_GRID_LOOP(i, outer * inner) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * n * inner + in;
    float* q = y + o * n * inner + in;
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
      if (p[j * inner] > p[best * inner]) best = j;
    for (int64_t j = 0; j < n; ++j) q[j * inner] = j == best ? 1.f : 0.f;
  }
}

}  // namespace

int hardmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, StreamT stream) {
  if (outer * inner <= 0 || n <= 0) return 0;
  hardmax_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, n, inner);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
