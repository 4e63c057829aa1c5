// ArgMax / ArgMin and CumSum kernels (arg_cumsum_kernels.h): one thread per output element.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/reduce/arg_cumsum/cuda/arg_cumsum_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/dims_index.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
using namespace dims_index;

__global__ void arg_reduce_kernel(const float* x, int64_t* y, int64_t outer, int64_t r, int64_t inner, bool is_max,
                                  bool last) {
  KILNRT_GRID_LOOP(i, outer * inner) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * r * inner + in;
    int64_t best = 0;
    float bv = p[0];
    for (int64_t j = 1; j < r; ++j) {
      const float v = p[j * inner];
      if (bv != bv) break;  // NaN wins (first NaN, like the CPU reference's comparisons)
      const bool better = v != v || (is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
      if (better) {
        bv = v;
        best = j;
      }
    }
    y[i] = best;
  }
}

template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, const void* axis_dev, bool axis_is_64, Dims s, int64_t total,
                              bool exclusive, bool reverse) {
  int64_t axis = axis_is_64 ? *static_cast<const int64_t*>(axis_dev) : *static_cast<const int32_t*>(axis_dev);
  if (axis < 0) axis += s.rank;
  if (axis < 0 || axis >= s.rank) return;
  int64_t inner = 1;
  for (int d = s.rank - 1; d > axis; --d) inner *= s.d[d];
  const int64_t len = s.d[axis];
  KILNRT_GRID_LOOP(i, total) {
    const int64_t pos = (i / inner) % len;
    const int64_t base = i - pos * inner;
    T acc = T(0);
    if (!reverse) {
      const int64_t end = exclusive ? pos : pos + 1;
      for (int64_t j = 0; j < end; ++j) acc += x[base + j * inner];
    } else {
      for (int64_t j = exclusive ? pos + 1 : pos; j < len; ++j) acc += x[base + j * inner];
    }
    y[i] = acc;
  }
}

}  // namespace

int arg_reduce_f32(const float* x, int64_t* y, int64_t outer, int64_t r, int64_t inner, bool is_max, bool last,
                   StreamT stream) {
  if (outer * inner <= 0 || r <= 0) return 0;
  arg_reduce_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, r, inner, is_max, last);
  return launch_status();
}

int cumsum(const void* x, void* y, const void* axis_dev, bool axis_is_64, const Dims& shape, bool exclusive,
           bool reverse, int dtype, StreamT stream) {
  const int64_t total = numel(shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (dtype) {
#define KILNRT_CUMSUM(C, T)                                                                                          \
  case C:                                                                                                            \
    cumsum_kernel<T><<<g, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), axis_dev, axis_is_64, \
                                                 shape, total, exclusive, reverse);                                  \
    break;
    KILNRT_CUMSUM(0, float)
    KILNRT_CUMSUM(1, int64_t) KILNRT_CUMSUM(2, int32_t) KILNRT_CUMSUM(6, double)
#undef KILNRT_CUMSUM
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
