// Kernel of Swish (swish_kernels.h): y = x * sigmoid(alpha * x), elementwise, float32 or float64.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/math/unary/cuda/swish_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename C>
__device__ __forceinline__ C sigmoid_of(C x) {
  if (x >= C(0)) return C(1) / (C(1) + exp(-x));
  const C e = exp(x);
  return e / (C(1) + e);
}

template <typename T>
__global__ void swish_kernel(const T* x, T* y, int64_t n, T alpha) {
  KILNRT_GRID_LOOP(i, n) y[i] = x[i] * sigmoid_of<T>(alpha * x[i]);
}

}  // namespace

int swish(const void* x, void* y, int64_t n, double alpha, bool f64, StreamT stream) {
  if (n <= 0) return 0;
  if (f64)
    swish_kernel<double>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const double*>(x), static_cast<double*>(y), n, alpha);
  else
    swish_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), n,
                                                                static_cast<float>(alpha));
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
