// Host entry point of the direct 2-D ConvTranspose kernel (conv_transpose2d.cu). Plain C++ like kernels.h; returns
// the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// 2-D transposed convolution (NCHW, grouped, strided, dilated, padded), bias may be null. w: [C, K/groups, kh, kw].
struct ConvT2d {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};
int conv_transpose2d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT2d& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels
