// MaxUnpool kernels (max_unpool_kernels.h): zero the output, then one thread per input element scatters it.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/detection/cuda/max_unpool_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void fill_zero_kernel(float* y, int64_t n) { KILNRT_GRID_LOOP(i, n) y[i] = 0.f; }

__global__ void maxunpool_kernel(const float* x, const int64_t* idx, int64_t n_in, float* y, DimsMask dflt,
                                 DimsMask out) {
  int64_t dflt_total = 1;
  for (int d = 0; d < dflt.rank; ++d) dflt_total *= dflt.d[d];
  KILNRT_GRID_LOOP(i, n_in) {
    int64_t rem = idx[i];
    if (rem < 0 || rem >= dflt_total) continue;
    int64_t flat = 0, stride = 1;
    bool inside = true;
    for (int d = dflt.rank - 1; d >= 0; --d) {
      const int64_t c = rem % dflt.d[d];
      rem /= dflt.d[d];
      inside &= c < out.d[d];
      flat += c * stride;
      stride *= out.d[d];
    }
    if (inside) y[flat] = x[i];
  }
}

}  // namespace

int maxunpool_f32(const float* x, const int64_t* idx, int64_t n_in, float* y, const DimsMask& dflt, const DimsMask& out,
                  StreamT stream) {
  int64_t n_out = 1;
  for (int d = 0; d < out.rank; ++d) n_out *= out.d[d];
  if (n_out <= 0) return 0;
  fill_zero_kernel<<<blocks_for(n_out), kThreads, 0, stream>>>(y, n_out);
  const int st = launch_status();
  if (st != 0 || n_in <= 0) return st;
  maxunpool_kernel<<<blocks_for(n_in), kThreads, 0, stream>>>(x, idx, n_in, y, dflt, out);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
