// kernels::broadcast_scale_f32 (gemm_kernels.h): Gemm's C operand, y = beta * c broadcast to the output through
// Broadcast3 strides.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/elementwise_access.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/gemm/cuda/gemm_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void broadcast_scale_kernel(const float* c, float* y, int64_t n, Broadcast3 bc, float beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oc, unused;
    offsets3(bc, i, oy, oc, unused);
    y[oy] = beta * c[oc];
  }
}

}  // namespace

int broadcast_scale_f32(const float* c, float* y, int64_t total, const Broadcast3& bc, float beta, StreamT stream) {
  if (total == 0) return 0;
  broadcast_scale_kernel<<<blocks_for(total), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(c, y, total, bc,
                                                                                                     beta);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
