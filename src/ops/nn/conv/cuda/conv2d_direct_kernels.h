// Host entry point of the direct 2-D convolution kernel (conv2d_direct.cu). Plain C++ like kernels.h (Conv2d, the
// convolution geometry, is there); returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Direct 2-D convolution over NCHW (grouped, strided, dilated, padded), bias may be null: the fallback when cuDNN
// is missing, and the reference tactic of the tests.
int conv2d_direct_f32(const float* x, const float* w, const float* bias, float* y, const Conv2d& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels
