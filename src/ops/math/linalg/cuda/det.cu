// Det kernel (det_kernels.h): LU with partial pivoting in double, one thread per matrix.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/math/linalg/cuda/det_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void det_kernel(const float* x, float* y, double* scratch, int64_t batch, int64_t m) {
  KILNRT_GRID_LOOP(b, batch) {
    double* a = scratch + b * m * m;
    for (int64_t k = 0; k < m * m; ++k) a[k] = x[b * m * m + k];
    double d = 1;
    for (int64_t c = 0; c < m && d != 0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
      if (a[p * m + c] == 0) {
        d = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k) {
          const double t = a[p * m + k];
          a[p * m + k] = a[c * m + k];
          a[c * m + k] = t;
        }
        d = -d;
      }
      d *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / a[c * m + c];
        for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
      }
    }
    y[b] = static_cast<float>(d);
  }
}

}  // namespace

int det_f32(const float* x, float* y, double* scratch, int64_t batch, int64_t m, StreamT stream) {
  if (batch <= 0) return 0;
  det_kernel<<<blocks_for(batch), kThreads, 0, stream>>>(x, y, scratch, batch, m);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
