// Host entry point of the 3-D pooling kernel (pool3d.cu), float32, NCDHW. Plain C++ like kernels.h; the launcher
// returns the launch status (0 = success).
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

}  // namespace kilnrt::cuda::kernels::vol
