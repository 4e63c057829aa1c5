// Resize with antialias=1 for linear and cubic modes (resize_kernels.h): the CPU reference's antialiased taps
// (src/ops/nn/resize/resize.cc antialias_taps) computed per output element on the device, without tap tables.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/resize/cuda/resize_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// The input coordinate of output coordinate x (coordinate_transformation_mode codes of ResizePlan::coord), as the
// CPU reference's original_coord: length_resized is scale * length_original.
__device__ double source_coord(const ResizePlan& p, const ResizeAxis& a, double x) {
  const double len_in = double(a.in), len_out = a.scale * len_in;
  switch (p.coord) {
    case 0: return (x + 0.5) / a.scale - 0.5;
    case 1: return len_in / 2 * (1 - double(a.out) / len_out) + (x + 0.5) / a.scale - 0.5;
    case 2: return len_out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case 3: return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
    case 4: return x / a.scale;
    case 5: return (x + 0.5) / a.scale;
    default:
      return len_out > 1 ? a.roi_start * (len_in - 1) + x * (a.roi_end - a.roi_start) * (len_in - 1) / (len_out - 1)
                         : 0.5 * (a.roi_start + a.roi_end) * (len_in - 1);
  }
}

// The antialiased filter of one axis at one output coordinate: taps i in [start, 2 - start) at input index
// base + i (clamped) with weight f(s * (i - ratio)) / sum.
struct AxisFilter {
  bool identity = false;
  int64_t index = 0;  // identity axis: the input index
  double s = 1, ratio = 0, sum = 0;
  int64_t start = 0, base = 0, in = 1;
};

__device__ __forceinline__ double filter_weight(const ResizePlan& p, double t) {
  t = fabs(t);
  if (p.mode == 1) return t < 1.0 ? 1.0 - t : 0.0;
  const double A = p.cubic_a;
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0.0;
}

// The raw weight of tap i (0 where exclude_outside drops it).
__device__ __forceinline__ double tap_weight(const ResizePlan& p, const AxisFilter& f, int64_t i) {
  const int64_t q = f.base + i;
  if (p.exclude_outside && (q < 0 || q >= f.in)) return 0.0;
  return filter_weight(p, f.s * (double(i) - f.ratio));
}

__global__ void resize_antialias_kernel(const float* x, float* y, ResizePlan p, int64_t total) {
  KILNRT_GRID_LOOP(e, total) {
    AxisFilter f[kMaxDims];
    int64_t ntaps[kMaxDims];
    bool outside = false;
    int64_t rem = e;
    for (int d = p.rank - 1; d >= 0; --d) {
      const ResizeAxis& a = p.ax[d];
      const int64_t o = rem % a.out;
      rem /= a.out;
      f[d].in = a.in;
      if (a.in == a.out && a.scale == 1.0 && p.coord != 6) {
        f[d].identity = true;
        f[d].index = o;
        ntaps[d] = 1;
        continue;
      }
      const double xc = source_coord(p, a, double(o));
      if (p.coord == 6 && (xc < 0 || xc > double(a.in - 1))) {
        outside = true;
        ntaps[d] = 1;
        continue;
      }
      f[d].s = a.scale < 1.0 ? a.scale : 1.0;
      const double fl = floor(xc);
      f[d].ratio = xc == fl ? 1.0 : xc - fl;
      f[d].start = int64_t(floor((p.mode == 1 ? -1.0 : -2.0) / f[d].s) + 1);
      f[d].base = llround(xc - f[d].ratio);
      double sum = 0;
      for (int64_t i = f[d].start; i < 2 - f[d].start; ++i) sum += tap_weight(p, f[d], i);
      f[d].sum = sum;
      ntaps[d] = 2 - 2 * f[d].start;
    }
    if (outside) {
      y[e] = float(p.extrapolation);
      continue;
    }
    int64_t combos = 1;
    for (int d = 0; d < p.rank; ++d) combos *= ntaps[d];
    double acc = 0.0;
    for (int64_t c = 0; c < combos; ++c) {
      // Tap k_d of every axis, the last axis fastest (the CPU reference's order).
      int64_t k[kMaxDims];
      int64_t r = c;
      for (int d = p.rank - 1; d >= 0; --d) {
        k[d] = r % ntaps[d];
        r /= ntaps[d];
      }
      double wt = 1.0;
      int64_t off = 0;
      bool skip = false;
      for (int d = 0; d < p.rank && !skip; ++d) {
        int64_t idx;
        if (f[d].identity) {
          idx = f[d].index;
        } else {
          const int64_t i = f[d].start + k[d];
          const double w = tap_weight(p, f[d], i);
          if (w == 0.0 || f[d].sum == 0.0) {  // the CPU reference keeps no such tap
            skip = true;
            break;
          }
          wt *= w / f[d].sum;
          idx = f[d].base + i;
          idx = idx < 0 ? 0 : (idx > f[d].in - 1 ? f[d].in - 1 : idx);
        }
        off = off * p.ax[d].in + idx;
      }
      if (!skip) acc += wt * double(x[off]);
    }
    y[e] = float(acc);
  }
}

}  // namespace

int resize_antialias_f32(const float* x, float* y, const ResizePlan& p, StreamT stream) {
  if (p.rank < 0 || p.rank > kMaxDims || (p.mode != 1 && p.mode != 2)) return static_cast<int>(cudaErrorInvalidValue);
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.ax[d].out;
  if (total <= 0) return 0;
  resize_antialias_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, p, total);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
