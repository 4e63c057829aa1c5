// Host entry point of the SwiGLU kernel (swiglu.cu), the formula of the CPU reference (src/ops/math/binary/binary.cc).
// Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// SwiGLU: y = a * sigmoid(alpha * a) * b, same shapes (double math).
int swiglu(const void* a, const void* b, void* y, int64_t n, double alpha, bool f64, StreamT stream);

}  // namespace kilnrt::cuda::kernels
