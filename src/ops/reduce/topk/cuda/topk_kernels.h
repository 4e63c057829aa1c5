// Host entry points of the TopK kernels: float32 (topk.cu) and integer (topk_int.cu). Plain C++ like kernels.h;
// each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// TopK over the middle dim of float32 [outer, n, inner] -> values / int64 indices [outer, k, inner], sorted (largest
// or smallest first, ties: lower index first). Each element computes its own rank: O(n) per element.
int topk_f32(const float* x, float* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k,
             bool largest, StreamT stream);
// TopK over the middle dim of an integer [outer, n, inner] (dtype: binary's codes 1 int64, 2 int32, 11 uint64) ->
// values (x's dtype) / int64 indices [outer, k, inner], sorted, equal values by the lower index first.
int topk_int(int dtype, const void* x, void* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
             int64_t k, bool largest, StreamT stream);

}  // namespace kilnrt::cuda::kernels
