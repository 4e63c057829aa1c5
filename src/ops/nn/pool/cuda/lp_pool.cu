// The LpPool kernel (lp_pool_kernels.h): one thread per output element (grid-stride loop), following the CPU
// reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/pool/cuda/lp_pool_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- LpPool --------------------------------------------------------------------------------------------------------
__global__ void lp_pool3_kernel(const float* x, float* y, LpPool3 g) {
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2], in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t total = g.planes * out_size;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t plane = i / out_size;
    int64_t r = i % out_size;
    const int64_t ow = r % g.out[2];
    r /= g.out[2];
    const int64_t oh = r % g.out[1], od = r / g.out[1];
    const float* xc = x + plane * in_size;
    double acc = 0.0;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] - g.pad[0] + kd * g.d[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] - g.pad[1] + kh * g.d[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t iw = ow * g.s[2] - g.pad[2] + kw * g.d[2];
          if (iw < 0 || iw >= g.in[2]) continue;
          const double v = fabs(static_cast<double>(xc[(id * g.in[1] + ih) * g.in[2] + iw]));
          acc += g.p == 2 ? v * v : g.p == 1 ? v : pow(v, g.p);
        }
      }
    }
    y[i] = static_cast<float>(g.p == 2 ? sqrt(acc) : g.p == 1 ? acc : pow(acc, 1.0 / g.p));
  }
}

}  // namespace

int lp_pool3(const float* x, float* y, const LpPool3& g, StreamT stream) {
  const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (total <= 0) return 0;
  lp_pool3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, g);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
