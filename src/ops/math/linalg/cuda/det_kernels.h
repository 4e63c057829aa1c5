// Host entry point of the Det kernel (det.cu). Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Det of float32 [batch, m, m] -> [batch]: LU with partial pivoting in double, one thread per matrix, using
// `scratch` (batch * m * m doubles, device).
int det_f32(const float* x, float* y, double* scratch, int64_t batch, int64_t m, StreamT stream);

}  // namespace kilnrt::cuda::kernels
