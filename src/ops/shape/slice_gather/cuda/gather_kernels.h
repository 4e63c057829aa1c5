// Host entry point of the Gather kernel (gather.cu). Plain C++ like kernels.h; returns the launch status (0 =
// success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Gather along an axis: x viewed as [outer, axis_dim, inner], indices (int64, n_idx of them, negative allowed)
// -> y [outer, n_idx, inner]. Out-of-range indices write zeros.
int gather(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
           int64_t inner, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
