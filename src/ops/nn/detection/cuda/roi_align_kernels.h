// Host entry point of the RoiAlign kernel (roi_align.cu). Plain C++ like kernels.h; returns the launch status
// (0 = success); nothing here synchronises or reads device memory on the host (graph-capture safe).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// RoiAlign of float32 x [N, C, H, W], rois [R, 4], batch indices int64 [R] -> y [R, C, oh, ow].
struct RoiAlignParams {
  int64_t n = 0, c = 0, h = 0, w = 0, r = 0, oh = 1, ow = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = true;
  bool max_mode = false;
};
int roi_align_f32(const float* x, const float* rois, const int64_t* batch_idx, float* y, const RoiAlignParams& p,
                  StreamT stream);

}  // namespace kilnrt::cuda::kernels
