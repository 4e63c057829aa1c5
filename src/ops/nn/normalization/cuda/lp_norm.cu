// The LpNormalization kernel (lp_norm_kernels.h), in its CPU reference's arithmetic (double accumulation in the
// reference's order, the same float roundings), so that results match it to the last bit or nearly (FMA contraction and
// the device exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/normalization/cuda/lp_norm_kernels.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- LpNormalization: one thread per (outer, inner) line
// -------------------------------------------------------------
__global__ void lp_norm_kernel(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p) {
  KILNRT_GRID_LOOP(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const int64_t base = o * dim * inner + i;
    double acc = 0.0;
    for (int64_t k = 0; k < dim; ++k) {
      const double v = x[base + k * inner];
      acc += p == 1 ? fabs(v) : v * v;
    }
    const double norm = p == 1 ? acc : sqrt(acc);
    for (int64_t k = 0; k < dim; ++k)
      y[base + k * inner] = norm == 0.0 ? 0.0f : static_cast<float>(x[base + k * inner] / norm);
  }
}

}  // namespace

int lp_norm(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p, StreamT stream) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || dim <= 0) return 0;
  lp_norm_kernel<<<blocks_for(lines), kThreads, 0, stream>>>(x, y, outer, dim, inner, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::linatt
