// Resize kernel of float32 (resize_kernels.h): separable taps per axis computed per output element, math in double
// like the CPU reference (src/ops/nn/resize/resize.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/resize/cuda/resize_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ double resize_coord(const ResizePlan& p, const ResizeAxis& a, double x) {
  const double len_in = double(a.in), len_out = a.scale * len_in;
  switch (p.coord) {
    case 0: return (x + 0.5) / a.scale - 0.5;
    case 1:
      return len_in / 2 * (1 - double(a.out) / len_out) + (x + 0.5) / a.scale - 0.5;  // as src/ops/nn/resize/resize.cc
    case 2: return len_out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case 3: return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
    case 4: return x / a.scale;
    case 5: return (x + 0.5) / a.scale;
    default:
      return len_out > 1 ? a.roi_start * (len_in - 1) + x * (a.roi_end - a.roi_start) * (len_in - 1) / (len_out - 1)
                         : 0.5 * (a.roi_start + a.roi_end) * (len_in - 1);
  }
}

// Taps of output coordinate o along axis a; returns their count (0: outside, the extrapolation value).
__device__ int resize_taps(const ResizePlan& p, const ResizeAxis& a, int64_t o, int64_t* idx, double* w) {
  if (a.in == a.out && a.scale == 1.0 && p.coord != 6) {
    idx[0] = o;
    w[0] = 1.0;
    return 1;
  }
  const double x = resize_coord(p, a, double(o));
  if (p.coord == 6 && (x < 0 || x > double(a.in - 1))) return 0;
  const double fl = floor(x);
  const int64_t x0 = int64_t(fl);
  const double r = x - fl;
  auto clampi = [&](int64_t i) { return i < 0 ? int64_t(0) : (i > a.in - 1 ? a.in - 1 : i); };
  if (p.mode == 0) {
    bool up;
    if (r == 0.0)
      up = false;
    else if (p.nearest == 0)
      up = r > 0.5;
    else if (p.nearest == 1)
      up = r >= 0.5;
    else
      up = p.nearest == 3;
    idx[0] = clampi(x0 + (up ? 1 : 0));
    w[0] = 1.0;
    return 1;
  }
  if (p.mode == 1) {
    idx[0] = clampi(x0);
    w[0] = 1.0 - r;
    if (r == 0.0) return 1;
    idx[1] = clampi(x0 + 1);
    w[1] = r;
    return 2;
  }
  const double A = p.cubic_a, r1 = r + 1, r2 = 1 - r, r3 = 2 - r;
  double c[4] = {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
                 ((A + 2) * r2 - (A + 3)) * r2 * r2 + 1, ((A * r3 - 5 * A) * r3 + 8 * A) * r3 - 4 * A};
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = x0 - 1 + k;
    if (p.exclude_outside && (i < 0 || i >= a.in)) c[k] = 0;
    sum += c[k];
  }
  int n = 0;
  for (int k = 0; k < 4; ++k) {
    if (p.exclude_outside) c[k] = sum != 0 ? c[k] / sum : 0;
    if (c[k] != 0) {
      idx[n] = clampi(x0 - 1 + k);
      w[n] = c[k];
      ++n;
    }
  }
  if (n == 0) {
    idx[0] = clampi(x0);
    w[0] = 0.0;
    n = 1;
  }
  return n;
}

__global__ void resize_kernel(const float* x, float* y, ResizePlan p, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t idx[kMaxDims][4];
    double w[kMaxDims][4];
    int nt[kMaxDims];
    bool outside = false;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.ax[d].out;
      rem /= p.ax[d].out;
      nt[d] = resize_taps(p, p.ax[d], o, idx[d], w[d]);
      outside |= nt[d] == 0;
    }
    if (outside) {
      y[i] = float(p.extrapolation);
      continue;
    }
    int64_t combos = 1;
    for (int d = 0; d < p.rank; ++d) combos *= nt[d];
    double acc = 0.0;
    for (int64_t c = 0; c < combos; ++c) {
      int64_t r = c, off = 0, stride = 1;
      double wt = 1.0;
      for (int d = p.rank - 1; d >= 0; --d) {
        const int k = int(r % nt[d]);
        r /= nt[d];
        wt *= w[d][k];
        off += idx[d][k] * stride;
        stride *= p.ax[d].in;
      }
      acc += wt * double(x[off]);
    }
    y[i] = float(acc);
  }
}

}  // namespace

int resize_f32(const float* x, float* y, const ResizePlan& p, StreamT stream) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.ax[d].out;
  if (total <= 0) return 0;
  resize_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, p, total);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
