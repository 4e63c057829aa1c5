// TopK on integer tensors (int32 / int64 / uint64): the rank-per-element scheme of the float32 kernel, exact
// integer comparisons; equal values keep the lower index first, like the CPU reference.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/reduce/topk/cuda/topk_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void topk_int_kernel(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                                int64_t k, bool largest) {
  const int64_t total = outer * n * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner, j = (i / inner) % n, o = i / (inner * n);
    const T* row = x + o * n * inner + in;
    const T v = row[j * inner];
    int64_t rank = 0;
    for (int64_t m = 0; m < n && rank < k; ++m) {
      const T u = row[m * inner];
      rank += (largest ? u > v : u < v) || (u == v && m < j) ? 1 : 0;
    }
    if (rank < k) {
      values[(o * k + rank) * inner + in] = v;
      indices[(o * k + rank) * inner + in] = j;
    }
  }
}

}  // namespace

int topk_int(int dtype, const void* x, void* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
             int64_t k, bool largest, StreamT stream) {
  const int64_t total = outer * n * inner;
  if (total <= 0 || k <= 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  const unsigned g = blocks_for(total);
  switch (dtype) {
    case 1:
      topk_int_kernel<int64_t><<<g, kThreads, 0, st>>>(static_cast<const int64_t*>(x), static_cast<int64_t*>(values),
                                                       indices, outer, n, inner, k, largest);
      break;
    case 2:
      topk_int_kernel<int32_t><<<g, kThreads, 0, st>>>(static_cast<const int32_t*>(x), static_cast<int32_t*>(values),
                                                       indices, outer, n, inner, k, largest);
      break;
    case 11:
      topk_int_kernel<uint64_t><<<g, kThreads, 0, st>>>(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(values),
                                                        indices, outer, n, inner, k, largest);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
