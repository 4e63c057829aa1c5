// TopK kernel of float32 (topk_kernels.h): each element computes its own rank along the axis (O(n) per element) and
// writes itself there when the rank is below k.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/reduce/topk/cuda/topk_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void topk_kernel(const float* x, float* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                            int64_t k, bool largest) {
  KILNRT_GRID_LOOP(i, outer * n * inner) {
    const int64_t in = i % inner, j = (i / inner) % n, o = i / (inner * n);
    const float* row = x + o * n * inner + in;
    const float v = row[j * inner];
    int64_t rank = 0;
    for (int64_t m = 0; m < n && rank < k; ++m) {
      const float u = row[m * inner];
      const bool before = largest ? (u > v || (u == v && m < j)) : (u < v || (u == v && m < j));
      rank += before ? 1 : 0;
    }
    if (rank < k) {
      values[(o * k + rank) * inner + in] = v;
      indices[(o * k + rank) * inner + in] = j;
    }
  }
}

}  // namespace

int topk_f32(const float* x, float* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k,
             bool largest, StreamT stream) {
  const int64_t total = outer * n * inner;
  if (total <= 0 || k <= 0) return 0;
  topk_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, values, indices, outer, n, inner, k, largest);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
