// Host entry points of the Resize kernels of float32: nearest / linear / cubic (resize.cu) and antialias=1 linear /
// cubic (resize_antialias.cu). Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Resize of float32 tensors (any rank up to kMaxDims), separable taps per axis computed in the kernel, math in
// double like the CPU reference. mode 0 nearest, 1 linear, 2 cubic; coord 0 half_pixel, 1 half_pixel_symmetric,
// 2 pytorch_half_pixel, 3 align_corners, 4 asymmetric, 5 tf_half_pixel_for_nearest, 6 tf_crop_and_resize;
// nearest 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil.
struct ResizeAxis {
  int64_t in = 1, out = 1;
  double scale = 1.0, roi_start = 0.0, roi_end = 1.0;
};
struct ResizePlan {
  int rank = 0, mode = 0, coord = 0, nearest = 0;
  ResizeAxis ax[kMaxDims];
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
};
int resize_f32(const float* x, float* y, const ResizePlan& p, StreamT stream);

// Resize antialias=1, linear / cubic:
// The plan of the main Resize layer (mode 1 linear, 2 cubic). Per axis, with s = min(scale, 1), the
// filter is stretched by 1/s and its weights normalised (src/ops/nn/resize/resize.cc antialias_taps); one thread per
// output element sums the product of the axes' taps in double.
int resize_antialias_f32(const float* x, float* y, const ResizePlan& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels
