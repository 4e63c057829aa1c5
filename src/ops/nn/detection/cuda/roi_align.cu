// RoiAlign kernel (roi_align_kernels.h): one thread per output element, bilinear samples in double like the CPU
// reference.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/detection/cuda/roi_align_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void roi_align_kernel(const float* x, const float* rois, const int64_t* bidx, float* y, RoiAlignParams p) {
  const int64_t total = p.r * p.c * p.oh * p.ow;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t pw = e % p.ow;
    const int64_t ph = (e / p.ow) % p.oh;
    const int64_t c = (e / (p.ow * p.oh)) % p.c;
    const int64_t r = e / (p.ow * p.oh * p.c);
    const double off = p.half_pixel ? 0.5 : 0.0;
    const double sw = rois[r * 4] * p.spatial_scale - off, sh = rois[r * 4 + 1] * p.spatial_scale - off;
    const double ew = rois[r * 4 + 2] * p.spatial_scale - off, eh = rois[r * 4 + 3] * p.spatial_scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!p.half_pixel) {
      rw = rw > 1.0 ? rw : 1.0;
      rh = rh > 1.0 ? rh : 1.0;
    }
    const double bh = rh / static_cast<double>(p.oh), bw = rw / static_cast<double>(p.ow);
    const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(ceil(rh / double(p.oh)));
    const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(ceil(rw / double(p.ow)));
    const double count = static_cast<double>(gh * gw > 1 ? gh * gw : 1);
    const int64_t n = bidx[r];
    if (n < 0 || n >= p.n) {  // the CPU reference would read out of bounds; NaN marks the bad index here
      y[e] = nan("");
      continue;
    }
    const float* img = x + (n * p.c + c) * p.h * p.w;
    const int64_t H = p.h, W = p.w;
    double acc = 0;
    bool first = true;
    for (int64_t iy = 0; iy < gh; ++iy)
      for (int64_t ix = 0; ix < gw; ++ix) {
        double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
        double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
        double v = 0, vmax = 0;
        if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
          yy = yy > 0 ? yy : 0.0;
          xx = xx > 0 ? xx : 0.0;
          int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx);
          int64_t yh, xh;
          if (yl >= H - 1) {
            yh = yl = H - 1;
            yy = static_cast<double>(yl);
          } else {
            yh = yl + 1;
          }
          if (xl >= W - 1) {
            xh = xl = W - 1;
            xx = static_cast<double>(xl);
          } else {
            xh = xl + 1;
          }
          const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
          const double t0 = hy * hx * img[yl * W + xl], t1 = hy * lx * img[yl * W + xh];
          const double t2 = ly * hx * img[yh * W + xl], t3 = ly * lx * img[yh * W + xh];
          v = t0 + t1 + t2 + t3;
          vmax = fmax(fmax(t0, t1), fmax(t2, t3));
        }
        if (!p.max_mode) {
          acc += v;
        } else {
          acc = first ? vmax : fmax(acc, vmax);
          first = false;
        }
      }
    y[e] = static_cast<float>(p.max_mode ? acc : acc / count);
  }
}

}  // namespace

int roi_align_f32(const float* x, const float* rois, const int64_t* batch_idx, float* y, const RoiAlignParams& p,
                  StreamT stream) {
  const int64_t total = p.r * p.c * p.oh * p.ow;
  if (total <= 0) return 0;
  roi_align_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, rois, batch_idx, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
