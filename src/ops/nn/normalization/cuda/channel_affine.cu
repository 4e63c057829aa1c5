// BatchNormalization folded to a per-channel affine (batch_norm_kernels.h: channel_affine): y = x * a[c] + b[c],
// float32 math over float32 / 16-bit storage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/float_storage_math.cuh"
#include "ops/nn/normalization/cuda/batch_norm_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void channel_affine_kernel(const T* x, const float* a, const float* b, T* y, int64_t outer, int64_t c,
                                      int64_t inner) {
  const int64_t n = outer * c * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / inner) % c;
    st(y, i, ld(x, i) * a[ch] + b[ch]);
  }
}

}  // namespace

int channel_affine(int dt, const void* x, const float* a, const float* b, void* y, int64_t outer, int64_t c,
                   int64_t inner, StreamT stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  KILNRT_DT_SWITCH(
      dt, channel_affine_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((const T*)x, a, b, (T*)y, outer, c, inner))
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
