// Where kernel (where_kernels.h): y = cond ? x : z with broadcasting, values moved as 1- / 2- / 4- / 8-byte
// integers (the planned fast path in elementwise_fast.cu first).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/elementwise_fast.h"
#include "ops/math/logic/cuda/where_kernels.h"
#include "cuda/kernels/elementwise_access.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void where_kernel(const uint8_t* c, const T* x, const T* z, T* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oc, ox, oz;
    offsets3(bc, i, oc, ox, oz);
    y[i] = c[oc] ? x[ox] : z[oz];
  }
}

}  // namespace

int where(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc, size_t elem_size,
          StreamT stream) {
  if (n == 0) return 0;
  if (const int fast = where_fast(cond, x, z, y, n, bc, elem_size, stream); fast >= 0) return fast;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      where_kernel<uint8_t><<<g, kThreads, 0, st>>>(cond, (const uint8_t*)x, (const uint8_t*)z, (uint8_t*)y, n, bc);
      break;
    case 2:
      where_kernel<uint16_t><<<g, kThreads, 0, st>>>(cond, (const uint16_t*)x, (const uint16_t*)z, (uint16_t*)y, n, bc);
      break;
    case 4:
      where_kernel<uint32_t><<<g, kThreads, 0, st>>>(cond, (const uint32_t*)x, (const uint32_t*)z, (uint32_t*)y, n, bc);
      break;
    case 8:
      where_kernel<uint64_t><<<g, kThreads, 0, st>>>(cond, (const uint64_t*)x, (const uint64_t*)z, (uint64_t*)y, n, bc);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
