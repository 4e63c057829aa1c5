// OneHot kernel (one_hot_kernels.h): one thread per output element, values copied as raw 1/2/4/8-byte elements.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/shape/index_ops/cuda/one_hot_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void onehot_kernel(const void* idx, int idx_code, const T* values, T* y, int64_t outer, int64_t depth,
                              int64_t inner) {
  const int64_t total = outer * depth * inner;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t i = e % inner;
    const int64_t k = (e / inner) % depth;
    const int64_t o = e / (inner * depth);
    const int64_t src = o * inner + i;
    int64_t want;
    if (idx_code == 0)
      want = static_cast<const int64_t*>(idx)[src];
    else if (idx_code == 1)
      want = static_cast<const int32_t*>(idx)[src];
    else
      want = static_cast<int64_t>(static_cast<double>(static_cast<const float*>(idx)[src]));
    if (want < 0) want += depth;
    y[e] = values[want == k ? 1 : 0];
  }
}

}  // namespace

int onehot(const void* idx, int idx_code, const void* values, void* y, int64_t outer, int64_t depth, int64_t inner,
           size_t elem_size, StreamT stream) {
  const int64_t total = outer * depth * inner;
  if (total <= 0) return 0;
  const unsigned b = blocks_for(total);
  switch (elem_size) {
    case 1:
      onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint8_t*>(values),
                                                static_cast<uint8_t*>(y), outer, depth, inner);
      break;
    case 2:
      onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint16_t*>(values),
                                                static_cast<uint16_t*>(y), outer, depth, inner);
      break;
    case 4:
      onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint32_t*>(values),
                                                static_cast<uint32_t*>(y), outer, depth, inner);
      break;
    case 8:
      onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint64_t*>(values),
                                                static_cast<uint64_t*>(y), outer, depth, inner);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
