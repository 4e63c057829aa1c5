// Kernel of SwiGLU (swiglu_kernels.h): y = a * sigmoid(alpha * a) * b, elementwise, float32 or float64 (double math).
#include <cuda_runtime.h>

#include <cmath>

#include "ops/math/binary/cuda/swiglu_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void swiglu_kernel(const T* a, const T* b, T* y, int64_t n, double alpha) {
  KILNRT_GRID_LOOP(i, n) {
    const double xa = static_cast<double>(a[i]);
    const double s = 1.0 / (1.0 + exp(-alpha * xa));
    y[i] = static_cast<T>(xa * s * static_cast<double>(b[i]));
  }
}

}  // namespace

int swiglu(const void* a, const void* b, void* y, int64_t n, double alpha, bool f64, StreamT stream) {
  if (n <= 0) return 0;
  if (f64)
    swiglu_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(y), n, alpha);
  else
    swiglu_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(y), n, alpha);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
