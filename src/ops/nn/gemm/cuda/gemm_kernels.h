// Host entry point of the kernel of Gemm's C operand (broadcast_scale.cu), run by the Gemm layer (gemm_layer.cc).
// Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// y[i] = bias[i % n] broadcast helper for Gemm's C: y (rows x n) = beta * c broadcast via strides (Broadcast3 s0).
int broadcast_scale_f32(const float* c, float* y, int64_t total, const Broadcast3& bc, float beta, StreamT stream);

}  // namespace kilnrt::cuda::kernels
