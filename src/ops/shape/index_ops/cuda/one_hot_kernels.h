// Host entry point of the OneHot kernel (one_hot.cu). Plain C++ like kernels.h; returns the launch status
// (0 = success); nothing here synchronises or reads device memory on the host (graph-capture safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// OneHot: y [outer, depth, inner] = values[1] where k == idx[o, i] (negative idx + depth) else values[0].
// idx_code: 0 int64, 1 int32, 2 float32; values: 2 elements of elem_size bytes (1, 2, 4, 8).
int onehot(const void* idx, int idx_code, const void* values, void* y, int64_t outer, int64_t depth, int64_t inner,
           size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
