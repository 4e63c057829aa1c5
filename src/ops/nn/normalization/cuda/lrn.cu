// LRN kernel of float32 across channels (lrn_kernels.h): one thread per element.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/normalization/cuda/lrn_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void lrn_kernel(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha,
                           float beta, float bias) {
  const int lo = (size - 1) / 2, hi = size - 1 - lo;
  KILNRT_GRID_LOOP(i, n * c * spatial) {
    const int64_t s = i % spatial, ch = (i / spatial) % c, b = i / (spatial * c);
    float sum = 0.f;
    for (int64_t cc = ch - lo; cc <= ch + hi; ++cc) {
      if (cc < 0 || cc >= c) continue;
      const float v = x[(b * c + cc) * spatial + s];
      sum += v * v;
    }
    y[i] = x[i] / powf(bias + alpha / float(size) * sum, beta);
  }
}

}  // namespace

int lrn_f32(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha, float beta,
            float bias, StreamT stream) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return 0;
  lrn_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, n, c, spatial, size, alpha, beta, bias);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
