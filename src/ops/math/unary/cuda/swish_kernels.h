// Host entry point of the Swish kernel (swish.cu), the formula of the CPU reference (src/ops/math/unary/unary.cc).
// Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Swish: y = x * sigmoid(alpha * x) (float math for float32, double for float64).
int swish(const void* x, void* y, int64_t n, double alpha, bool f64, StreamT stream);

}  // namespace kilnrt::cuda::kernels
