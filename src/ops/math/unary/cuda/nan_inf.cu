// IsNaN / IsInf on float16, bfloat16 and float64 storage (nan_inf_kernels.h; float32 is math_unary.cu's xunary): bool
// output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/math/unary/cuda/nan_inf_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ __forceinline__ double load_wide(const void* p, int dtype, int64_t i) {
  switch (dtype) {
    case 4: return __half2float(static_cast<const __half*>(p)[i]);
    case 5: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const double*>(p)[i];
  }
}

__global__ void nan_inf_kernel(int dtype, const void* x, uint8_t* y, int64_t n, bool is_nan, bool pos, bool neg) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double v = load_wide(x, dtype, i);
    y[i] = is_nan ? (v != v) : (isinf(v) && ((v > 0.0 && pos) || (v < 0.0 && neg)));
  }
}

}  // namespace

int nan_inf(int dtype, const void* x, uint8_t* y, int64_t n, bool is_nan, bool detect_positive, bool detect_negative,
            StreamT stream) {
  if (n <= 0) return 0;
  if (dtype != 4 && dtype != 5 && dtype != 12) return static_cast<int>(cudaErrorInvalidValue);
  nan_inf_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
      dtype, x, y, n, is_nan, detect_positive, detect_negative);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
