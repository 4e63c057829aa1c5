// The inverse real FFT (DFT inverse + onesided, signal_kernels.h): one thread per output sample, a naive O(n) sum per
// sample in double with the CPU reference's angle reduction ((k * t) mod n) and Hermitian completion
// (src/ops/math/signal/signal.cc).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/math/signal/cuda/signal_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void irfft_kernel(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n) {
  const double kPi = 3.14159265358979323846;
  KILNRT_GRID_LOOP(idx, outer * n * inner) {
    const int64_t i = idx % inner;
    const int64_t k = (idx / inner) % n;
    const int64_t o = idx / (inner * n);
    double sr = 0;
    for (int64_t t = 0; t < n; ++t) {
      const bool mirror = t >= len;
      const int64_t src = mirror ? n - t : t;
      if (src >= len) continue;
      const int64_t base = ((o * len + src) * inner + i) * comp;
      const double re = x[base];
      double im = comp == 2 ? static_cast<double>(x[base + 1]) : 0.0;
      if (mirror) im = -im;
      const double a = 2 * kPi * static_cast<double>((k * t) % n) / static_cast<double>(n);
      sr += re * cos(a) - im * sin(a);
    }
    y[idx] = static_cast<float>(sr / static_cast<double>(n));
  }
}

}  // namespace

int irfft_f32(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n,
              StreamT stream) {
  const int64_t total = outer * n * inner;
  if (total <= 0) return 0;
  if (len < 1 || (comp != 1 && comp != 2)) return static_cast<int>(cudaErrorInvalidValue);
  irfft_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, outer, len, inner, comp, n);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
