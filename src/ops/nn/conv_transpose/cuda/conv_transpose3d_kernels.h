// Host entry point of the 3-D transposed-convolution kernel (conv_transpose3d.cu), float32, NCDHW. Plain C++ like
// kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::vol {

// ConvTranspose over 3 spatial dims (NCDHW), grouped, strided, dilated; `pad_begin` per dim (resolved by the
// caller from pads / auto_pad / output_shape). w: [C, K/groups, kd, kh, kw]; bias may be null.
struct ConvT3 {
  int64_t n = 0, c = 0, k = 0;  // batch, input channels, output channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kern[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0};
  int64_t groups = 1;
};
int conv_transpose3d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT3& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels::vol
