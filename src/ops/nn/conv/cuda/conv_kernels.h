// Host entry points of the convolution kernels (conv_epilogue.cu). Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// The epilogue of a fused convolution, in place on y (n elements, storage dtype dt: 0 float32, 1 float16,
// 2 bfloat16; float32 math): y = act(y + bias[c] + z), c = (i / inner) % channels (NCHW: inner = H*W; NHWC:
// inner = 1). bias and z may be null; z has y's layout. act: ops::nn::FusedActivation's code (0 none, 1 relu,
// 2 clip(a, b), 3 leaky relu(a), 4 hard sigmoid(a, b), 5 hard swish, 6 sigmoid, 7 silu, 8 gelu, 9 gelu tanh).
int conv_epilogue(int dt, void* y, const void* bias, const void* z, int64_t n, int64_t inner, int64_t channels, int act,
                  float a, float b, StreamT stream);

// Depthwise 2-D convolution (p.groups == p.c == p.k) over NHWC 16-bit storage (nhwc_depthwise.cu): x [N,H,W,C],
// w [KH,KW,C] in x's dtype, y [N,OH,OW,C]; no bias (the epilogue adds it). dt 1 float16, 2 bfloat16.
// Takes the 8-channel kernel where it applies and depthwise_nhwc_vec_enabled(), else the scalar one.
int depthwise_conv2d_nhwc(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream);
// One thread per output element (any C, any alignment).
int depthwise_conv2d_nhwc_scalar(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream);
// False with KILNRT_CUDA_DW_VEC=0 (read once): depthwise_conv2d_nhwc then always takes the scalar kernel.
bool depthwise_nhwc_vec_enabled();
// 8 channels per thread (nhwc_depthwise_vec.cu): needs C % 8 == 0 and 16-byte aligned x, w, y
// (depthwise_conv2d_nhwc_vec8_applies).
bool depthwise_conv2d_nhwc_vec8_applies(const void* x, const void* w, const void* y, const Conv2d& p);
int depthwise_conv2d_nhwc_vec8(int dt, const void* x, const void* w, void* y, const Conv2d& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels
