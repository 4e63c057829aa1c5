// Fast path of kernels::strided_copy (strided_copy_fast.cu): merged dims, 32-bit index math, 16-byte vectors.
#pragma once
#include <cstddef>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {
// Launches the copy and returns its status (0 = success), or -1 when the fast path does not apply (indices beyond
// 32 bits, unusual element size): the caller then runs the generic kernel.
int strided_copy_fast(void* dst, const void* src, const Strided& s, size_t elem_size, StreamT stream);
// kernels::gather's fast path (gather_plan.h: 32-bit index math, 16-byte units along contiguous aligned rows); -1
// when it does not apply (beyond 32 bits, unusual element size).
int gather_fast(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
                int64_t inner, size_t elem_size, StreamT stream);
}  // namespace kilnrt::cuda::kernels
