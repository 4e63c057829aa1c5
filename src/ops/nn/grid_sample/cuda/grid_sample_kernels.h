// Host entry point of the GridSample kernel (grid_sample.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// GridSample on float32 X [n, c, h, w] and grid [n, oh, ow, 2] (x, y in [-1, 1]), math in double like the CPU
// reference. mode 0 bilinear, 1 nearest, 2 bicubic; pad 0 zeros, 1 border, 2 reflection.
int grid_sample_f32(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                    int64_t ow, int mode, int pad, bool align_corners, StreamT stream);

}  // namespace kilnrt::cuda::kernels
