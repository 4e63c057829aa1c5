// Host entry point of the Where kernel (where.cu). Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// y = cond ? x : z with broadcasting (s0 cond, s1 x, s2 z); elem_size of x/z: 1, 2, 4, 8.
int where(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc, size_t elem_size,
          StreamT stream);

}  // namespace kilnrt::cuda::kernels
