// Device helpers of the coordinate-indexing kernels (GatherElements, ScatterElements, NegativeLogLikelihoodLoss ...):
// the element count of a Dims, an int32 / int64 index load, and the offset of an element with one coordinate
// replaced. Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/dims.h"

namespace kilnrt::cuda::kernels::dims_index {

inline int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i) n *= d.d[i];
  return n;
}

__device__ __forceinline__ int64_t load_index(const void* idx, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(idx)[i] : static_cast<const int32_t*>(idx)[i];
}

// Offset in a contiguous tensor of shape `shape` of element i of a tensor of shape `by` (same rank), with the
// coordinate of `axis` replaced by `axis_coord`.
__device__ __forceinline__ int64_t remap_offset(const Dims& shape, const Dims& by, int64_t i, int axis,
                                                int64_t axis_coord) {
  int64_t off = 0, stride = 1;
  for (int d = by.rank - 1; d >= 0; --d) {
    int64_t c = i % by.d[d];
    i /= by.d[d];
    if (d == axis) c = axis_coord;
    off += c * stride;
    stride *= shape.d[d];
  }
  return off;
}

}  // namespace kilnrt::cuda::kernels::dims_index
