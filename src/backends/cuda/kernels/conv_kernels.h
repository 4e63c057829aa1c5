// Host entry points of the convolution kernels (conv_epilogue.cu). Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "backends/cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// The epilogue of a fused convolution, in place on y (n elements, storage dtype dt: 0 float32, 1 float16,
// 2 bfloat16; float32 math): y = act(y + bias[c] + z), c = (i / inner) % channels (NCHW: inner = H*W; NHWC:
// inner = 1). bias and z may be null; z has y's layout. act: ops::nn::FusedActivation's code (0 none, 1 relu,
// 2 clip(a, b), 3 leaky relu(a), 4 hard sigmoid(a, b), 5 hard swish, 6 sigmoid, 7 silu, 8 gelu, 9 gelu tanh).
int conv_epilogue(int dt, void* y, const void* bias, const void* z, int64_t n, int64_t inner, int64_t channels,
                  int act, float a, float b, StreamT stream);

}  // namespace kilnrt::cuda::kernels
