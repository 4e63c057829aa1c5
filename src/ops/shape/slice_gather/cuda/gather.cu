// Gather kernel (gather_kernels.h): x viewed as [outer, axis_dim, inner] -> y [outer, n_idx, inner], the planned
// fast path (gather_fast, strided_copy_fast.cu) first, the generic 64-bit kernel here for the rest.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/strided_copy_fast.h"
#include "ops/shape/slice_gather/cuda/gather_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* idx, T* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
                              int64_t inner) {
  const int64_t n = outer * n_idx * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner;
    const int64_t j = (i / inner) % n_idx;
    const int64_t o = i / (inner * n_idx);
    int64_t k = idx[j];
    if (k < 0) k += axis_dim;
    y[i] = (k >= 0 && k < axis_dim) ? x[(o * axis_dim + k) * inner + in] : T(0);
  }
}

}  // namespace

int gather(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
           int64_t inner, size_t elem_size, StreamT stream) {
  const int64_t n = outer * n_idx * inner;
  if (n == 0) return 0;
  if (const int fast = gather_fast(x, indices, y, outer, axis_dim, n_idx, inner, elem_size, stream); fast >= 0)
    return fast;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1:
      gather_kernel<uint8_t>
          <<<g, kThreads, 0, st>>>((const uint8_t*)x, indices, (uint8_t*)y, outer, axis_dim, n_idx, inner);
      break;
    case 2:
      gather_kernel<uint16_t>
          <<<g, kThreads, 0, st>>>((const uint16_t*)x, indices, (uint16_t*)y, outer, axis_dim, n_idx, inner);
      break;
    case 4:
      gather_kernel<uint32_t>
          <<<g, kThreads, 0, st>>>((const uint32_t*)x, indices, (uint32_t*)y, outer, axis_dim, n_idx, inner);
      break;
    case 8:
      gather_kernel<uint64_t>
          <<<g, kThreads, 0, st>>>((const uint64_t*)x, indices, (uint64_t*)y, outer, axis_dim, n_idx, inner);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
