// Host entry point of the LpNormalization kernel (lp_norm.cu). It follows the CPU reference
// (src/ops/nn/normalization/normalization.cc): double accumulation in the same order, float32 I/O (16-bit tensors run
// as float32 islands). Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- LpNormalization
// --------------------------------------------------------------------------------------------------- x [outer, dim,
// inner], p 1 or 2; a zero norm gives 0.
int lp_norm(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
