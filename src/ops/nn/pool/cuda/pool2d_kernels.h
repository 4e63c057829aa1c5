// Host entry points of the 2-D pooling kernels over NCHW (pool2d.cu) and NHWC storage (pool2d_nhwc.cu). Plain C++
// like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// 2-D pooling over NCHW.
struct Pool2d {
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool max = true;
  bool count_include_pad = false;
};
// dt: 0 float32, 1 float16, 2 bfloat16 (storage; math in float32).
int pool2d(int dt, const void* x, void* y, const Pool2d& p, StreamT stream);

// 2-D max / average pooling over NHWC storage (pool2d_nhwc.cu): same parameters and semantics as pool2d,
// x is [N,H,W,C], y is [N,OH,OW,C]; dt as above.
int pool2d_nhwc(int dt, const void* x, void* y, const Pool2d& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels
