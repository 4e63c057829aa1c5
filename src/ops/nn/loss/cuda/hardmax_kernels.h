// Host entry point of the Hardmax kernel (hardmax.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Hardmax over the middle dim of [outer, n, inner] (1 at the first maximum, else 0).
int hardmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, StreamT stream);

}  // namespace kilnrt::cuda::kernels
