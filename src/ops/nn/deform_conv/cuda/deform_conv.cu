// The DeformConv kernel (deform_conv_kernels.h): one thread per output element (grid-stride loop), following the CPU
// reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/deform_conv/cuda/deform_conv_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- DeformConv ----------------------------------------------------------------------------------------------------
__device__ double bilinear_zero_pad(const float* plane, int64_t h, int64_t w, double y, double x) {
  const double y0f = floor(y), x0f = floor(x);
  const auto y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const double fy = y - y0f, fx = x - x0f;
  double acc = 0.0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      const double wt = (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx);
      if (wt != 0.0) acc += wt * static_cast<double>(plane[yy * w + xx]);
    }
  return acc;
}

__global__ void deform_conv2d_kernel(DeformConvArgs a, int64_t total) {
  const int64_t icg = a.c / a.group, ocg = a.oc / a.group, ic_per_og = a.c / a.offset_group;
  const int64_t taps = a.kh * a.kw, opix = a.oh * a.ow;
  KILNRT_GRID_LOOP(idx, total) {
    const int64_t p = idx % opix;
    const int64_t o = (idx / opix) % a.oc, b = idx / (opix * a.oc);
    const int64_t i = p / a.ow, j = p % a.ow;
    const int64_t g = o / ocg;
    double acc = a.bias ? static_cast<double>(a.bias[o]) : 0.0;
    for (int64_t cl = 0; cl < icg; ++cl) {
      const int64_t ci = g * icg + cl;
      const int64_t og = ci / ic_per_og;
      const float* plane = a.x + (b * a.c + ci) * a.h * a.w;
      for (int64_t k = 0; k < taps; ++k) {
        const int64_t ka = k / a.kw, ke = k % a.kw;
        const int64_t tap = og * taps + k;
        const float* dh = a.offset + ((b * a.offset_group * taps + tap) * 2) * opix;
        const double yy = static_cast<double>(i * a.stride[0] - a.pad[0] + ka * a.dil[0]) + static_cast<double>(dh[p]);
        const double xx =
            static_cast<double>(j * a.stride[1] - a.pad[1] + ke * a.dil[1]) + static_cast<double>(dh[opix + p]);
        double v = bilinear_zero_pad(plane, a.h, a.w, yy, xx);
        if (a.mask) v *= static_cast<double>(a.mask[(b * a.offset_group * taps + tap) * opix + p]);
        acc += static_cast<double>(a.weight[(o * icg + cl) * taps + k]) * v;
      }
    }
    a.y[idx] = static_cast<float>(acc);
  }
}

}  // namespace

int deform_conv2d(const DeformConvArgs& a, StreamT stream) {
  const int64_t total = a.n * a.oc * a.oh * a.ow;
  if (total <= 0) return 0;
  deform_conv2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, total);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
