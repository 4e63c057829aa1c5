// Host entry point of the IsNaN / IsInf kernel of 16-bit and float64 storage (nan_inf.cu). Plain C++ like kernels.h;
// returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// IsNaN (is_nan) / IsInf (detect_positive / detect_negative) of float16 / bfloat16 / float64 storage (binary's codes
// 4, 5, 12) -> bool.
int nan_inf(int dtype, const void* x, uint8_t* y, int64_t n, bool is_nan, bool detect_positive, bool detect_negative,
            StreamT stream);

}  // namespace kilnrt::cuda::kernels
