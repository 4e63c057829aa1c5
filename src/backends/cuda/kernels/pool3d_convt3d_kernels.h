// Host entry points of the 3-D pooling and 3-D transposed-convolution kernels (kernels/pool3d_convt3d.cu), float32,
// NCDHW. Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::vol {

// MaxPool / AveragePool over 3 spatial dims (1-D and 2-D callers may pass leading dims of size 1). Taps at
// o * s - pad_begin + j * d; those outside the input are skipped. Max: -inf for an empty window, NaN propagates.
// Average: the sum over the taps inside the input divided by the tap count inside [lo, hi) per dim, where
// [lo, hi) is the input (count_include_pad=0) or the input plus its begin / end pads (count_include_pad=1: the
// ceil_mode overhang beyond the end pad never counts); 0 when that count is 0.
struct Pool3 {
  int64_t planes = 0;  // N * C
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
  bool max = true;
  bool count_include_pad = false;
};
int pool3d_f32(const float* x, float* y, const Pool3& p, StreamT stream);

// ConvTranspose over 3 spatial dims (NCDHW), grouped, strided, dilated; `pad_begin` per dim (resolved by the
// caller from pads / auto_pad / output_shape). w: [C, K/groups, kd, kh, kw]; bias may be null.
struct ConvT3 {
  int64_t n = 0, c = 0, k = 0;  // batch, input channels, output channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kern[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0};
  int64_t groups = 1;
};
int conv_transpose3d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT3& p,
                         StreamT stream);

}  // namespace kilnrt::cuda::kernels::vol
