// The tiled NHWC depthwise convolution with its epilogue fused (nhwc_depthwise_tile.cu): the path the
// depthwise convolutions of 16-bit NHWC plans take (conv_layer.cc) where depthwise_nhwc_tile_applies, in
// place of depthwise_conv2d_nhwc (conv_kernels.h) followed by a separate conv_epilogue pass. Plain C++.
#pragma once
#include <cstdint>

#include "ops/nn/conv/cuda/conv_kernels.h"

namespace kilnrt::cuda::kernels {

// y = act(depthwise(in_act(x), w) + bias[c] + z): bias [C] and z (y's shape, NHWC) in y's dtype, each may be null;
// act and a, b as conv_epilogue's (conv_kernels.h: 0 none, 1 relu, ... 7 silu, 8 gelu, 9 gelu tanh). in_act (same
// codes, in_a / in_b its parameters; FusedConv's input_activation) is applied to each input element inside the
// image as it is loaded, rounded to x's dtype (what a separate activation pass would store); the zero padding stays
// zero whatever in_act(0) is.
struct DepthwiseEpilogue {
  const void* bias = nullptr;
  const void* z = nullptr;
  int act = 0;
  float a = 0.f, b = 0.f;
  int in_act = 0;
  float in_a = 0.f, in_b = 0.f;
};

// False with KILNRT_CUDA_DW_TILE=0 (read once): the layers then run depthwise_conv2d_nhwc + conv_epilogue.
bool depthwise_nhwc_tile_enabled();
// The geometry the tiled kernel covers: depthwise (groups == C == K), C % 8 == 0, square 3x3 / 5x5 / 7x7 kernels,
// stride 1 or 2 (the same along both axes), dilation 1, any padding, N <= 65535, every index below 2^31.
bool depthwise_nhwc_tile_geometry(const Conv2d& p);
// ... and x, w, y, z (when not null) 16-byte aligned, the kernel enabled.
bool depthwise_nhwc_tile_applies(const void* x, const void* w, const void* y, const void* z, const Conv2d& p);
// x [N,H,W,C], w [KH,KW,C], y [N,OH,OW,C] (dt 1 float16, 2 bfloat16), float32 accumulation and epilogue math, one
// rounding per output. rows_per_thread 1, 2 or 4 forces the output rows each thread computes (tests); 0 picks.
// cudaErrorInvalidValue where it does not apply.
int depthwise_conv2d_nhwc_tile(int dt, const void* x, const void* w, void* y, const Conv2d& p,
                               const DepthwiseEpilogue& e, StreamT stream, int rows_per_thread = 0);

}  // namespace kilnrt::cuda::kernels
