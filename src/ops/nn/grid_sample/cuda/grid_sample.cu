// GridSample kernel of float32 (grid_sample_kernels.h): one thread per output element, math in double like the CPU
// reference (src/ops/nn/grid_sample/grid_sample.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/grid_sample/cuda/grid_sample_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ double gs_unnormalize(double c, int64_t size, bool align) {
  return align ? (c + 1) / 2 * double(size - 1) : ((c + 1) * double(size) - 1) / 2;
}
__device__ double gs_reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double mn = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = fabs(x - mn);
  const double extra = fmod(x, span);
  const int64_t flips = static_cast<int64_t>(floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}
__device__ double gs_adjust(double x, int64_t size, int pad, bool align) {
  if (pad == 0) return x;
  if (pad == 2) x = align ? gs_reflect(x, 0, 2.0 * double(size - 1)) : gs_reflect(x, -1, 2.0 * double(size) - 1);
  return fmin(double(size - 1), fmax(x, 0.0));
}
__device__ double gs_pixel(const float* img, int64_t h, int64_t w, int64_t yy, int64_t xx, int mode, int pad,
                           bool align) {
  if (mode == 2 && pad != 0) {
    xx = static_cast<int64_t>(gs_adjust(double(xx), w, pad, align));
    yy = static_cast<int64_t>(gs_adjust(double(yy), h, pad, align));
  }
  if (yy < 0 || yy >= h || xx < 0 || xx >= w) return 0.0;
  return img[yy * w + xx];
}
__device__ double cubic1(double t) {
  const double A = -0.75;
  return ((A + 2) * t - (A + 3)) * t * t + 1;
}
__device__ double cubic2(double t) {
  const double A = -0.75;
  return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
}

__global__ void grid_sample_kernel(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t h,
                                   int64_t w, int64_t oh, int64_t ow, int mode, int pad, bool align) {
  KILNRT_GRID_LOOP(i, n * c * oh * ow) {
    const int64_t j = i % ow, r = (i / ow) % oh, ch = (i / (ow * oh)) % c, b = i / (ow * oh * c);
    const float* img = x + (b * c + ch) * h * w;
    const float* gp = grid + ((b * oh + r) * ow + j) * 2;
    double ix = gs_unnormalize(gp[0], w, align), iy = gs_unnormalize(gp[1], h, align);
    double v = 0.0;
    if (mode == 2) {
      const double fx = floor(ix), fy = floor(iy), tx = ix - fx, ty = iy - fy;
      const double wx[4] = {cubic2(tx + 1), cubic1(tx), cubic1(1 - tx), cubic2(2 - tx)};
      const double wy[4] = {cubic2(ty + 1), cubic1(ty), cubic1(1 - ty), cubic2(2 - ty)};
      for (int a = 0; a < 4; ++a)
        for (int q = 0; q < 4; ++q)
          v += wy[a] * wx[q] * gs_pixel(img, h, w, int64_t(fy) - 1 + a, int64_t(fx) - 1 + q, mode, pad, align);
    } else {
      ix = gs_adjust(ix, w, pad, align);
      iy = gs_adjust(iy, h, pad, align);
      if (mode == 1) {
        v = gs_pixel(img, h, w, int64_t(rint(iy)), int64_t(rint(ix)), mode, pad, align);
      } else {
        const double fx = floor(ix), fy = floor(iy);
        const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
        const double lx = ix - fx, ly = iy - fy;
        v = (1 - ly) * (1 - lx) * gs_pixel(img, h, w, y0, x0, mode, pad, align) +
            (1 - ly) * lx * gs_pixel(img, h, w, y0, x0 + 1, mode, pad, align) +
            ly * (1 - lx) * gs_pixel(img, h, w, y0 + 1, x0, mode, pad, align) +
            ly * lx * gs_pixel(img, h, w, y0 + 1, x0 + 1, mode, pad, align);
      }
    }
    y[i] = static_cast<float>(v);
  }
}

}  // namespace

int grid_sample_f32(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                    int64_t ow, int mode, int pad, bool align_corners, StreamT stream) {
  const int64_t total = n * c * oh * ow;
  if (total <= 0) return 0;
  grid_sample_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, grid, y, n, c, h, w, oh, ow, mode, pad,
                                                                 align_corners);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
