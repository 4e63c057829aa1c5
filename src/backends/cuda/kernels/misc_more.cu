// Kernels of MeanVarianceNormalization, OneHot, MaxUnpool and RoiAlign (more_kernels.h). Direct, one thread per
// output element (MVN: one block per group), float32 data with double statistics like the CPU reference.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/more_kernels.h"

namespace kilnrt::cuda::kernels::more {
namespace {

using namespace launch_common;

// Flat offset of element j of group g: g enumerates the unflagged dims, j the flagged ones (both row-major).
__device__ int64_t mvn_offset(const DimsMask& s, int64_t g, int64_t j) {
  int64_t off = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t c;
    if (s.flag[d]) {
      c = j % s.d[d];
      j /= s.d[d];
    } else {
      c = g % s.d[d];
      g /= s.d[d];
    }
    off += c * stride;
    stride *= s.d[d];
  }
  return off;
}

__global__ void mvn_kernel(const float* x, float* y, DimsMask s, int64_t groups, int64_t count) {
  __shared__ double sum_sh[kThreads], sq_sh[kThreads];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    double sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const double v = x[mvn_offset(s, g, j)];
      sum += v;
      sq += v * v;
    }
    sum_sh[threadIdx.x] = sum;
    sq_sh[threadIdx.x] = sq;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (static_cast<int>(threadIdx.x) < w) {
        sum_sh[threadIdx.x] += sum_sh[threadIdx.x + w];
        sq_sh[threadIdx.x] += sq_sh[threadIdx.x + w];
      }
      __syncthreads();
    }
    const double mean = sum_sh[0] / static_cast<double>(count);
    const double var = sq_sh[0] / static_cast<double>(count) - mean * mean;
    const double denom = sqrt(var > 0 ? var : 0.0) + 1e-9;
    __syncthreads();  // everybody has read sum_sh[0] / sq_sh[0] before the next group overwrites them
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t off = mvn_offset(s, g, j);
      y[off] = static_cast<float>((static_cast<double>(x[off]) - mean) / denom);
    }
  }
}

template <typename T>
__global__ void onehot_kernel(const void* idx, int idx_code, const T* values, T* y, int64_t outer, int64_t depth,
                              int64_t inner) {
  const int64_t total = outer * depth * inner;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t i = e % inner;
    const int64_t k = (e / inner) % depth;
    const int64_t o = e / (inner * depth);
    const int64_t src = o * inner + i;
    int64_t want;
    if (idx_code == 0) want = static_cast<const int64_t*>(idx)[src];
    else if (idx_code == 1) want = static_cast<const int32_t*>(idx)[src];
    else want = static_cast<int64_t>(static_cast<double>(static_cast<const float*>(idx)[src]));
    if (want < 0) want += depth;
    y[e] = values[want == k ? 1 : 0];
  }
}

__global__ void fill_zero_kernel(float* y, int64_t n) {
  KILNRT_GRID_LOOP(i, n) y[i] = 0.f;
}

__global__ void maxunpool_kernel(const float* x, const int64_t* idx, int64_t n_in, float* y, DimsMask dflt,
                                 DimsMask out) {
  int64_t dflt_total = 1;
  for (int d = 0; d < dflt.rank; ++d) dflt_total *= dflt.d[d];
  KILNRT_GRID_LOOP(i, n_in) {
    int64_t rem = idx[i];
    if (rem < 0 || rem >= dflt_total) continue;
    int64_t flat = 0, stride = 1;
    bool inside = true;
    for (int d = dflt.rank - 1; d >= 0; --d) {
      const int64_t c = rem % dflt.d[d];
      rem /= dflt.d[d];
      inside &= c < out.d[d];
      flat += c * stride;
      stride *= out.d[d];
    }
    if (inside) y[flat] = x[i];
  }
}

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
          if (yl >= H - 1) { yh = yl = H - 1; yy = static_cast<double>(yl); } else { yh = yl + 1; }
          if (xl >= W - 1) { xh = xl = W - 1; xx = static_cast<double>(xl); } else { xh = xl + 1; }
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

int mvn_f32(const float* x, float* y, const DimsMask& shape, int64_t groups, int64_t count, StreamT stream) {
  if (groups <= 0 || count <= 0) return 0;
  const unsigned blocks = static_cast<unsigned>(groups < 65535 ? groups : 65535);
  mvn_kernel<<<blocks, kThreads, 0, stream>>>(x, y, shape, groups, count);
  return launch_status();
}

int onehot(const void* idx, int idx_code, const void* values, void* y, int64_t outer, int64_t depth, int64_t inner,
           size_t elem_size, StreamT stream) {
  const int64_t total = outer * depth * inner;
  if (total <= 0) return 0;
  const unsigned b = blocks_for(total);
  switch (elem_size) {
    case 1: onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint8_t*>(values),
                                                       static_cast<uint8_t*>(y), outer, depth, inner); break;
    case 2: onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint16_t*>(values),
                                                       static_cast<uint16_t*>(y), outer, depth, inner); break;
    case 4: onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint32_t*>(values),
                                                       static_cast<uint32_t*>(y), outer, depth, inner); break;
    case 8: onehot_kernel<<<b, kThreads, 0, stream>>>(idx, idx_code, static_cast<const uint64_t*>(values),
                                                       static_cast<uint64_t*>(y), outer, depth, inner); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int maxunpool_f32(const float* x, const int64_t* idx, int64_t n_in, float* y, const DimsMask& dflt,
                  const DimsMask& out, StreamT stream) {
  int64_t n_out = 1;
  for (int d = 0; d < out.rank; ++d) n_out *= out.d[d];
  if (n_out <= 0) return 0;
  fill_zero_kernel<<<blocks_for(n_out), kThreads, 0, stream>>>(y, n_out);
  const int st = launch_status();
  if (st != 0 || n_in <= 0) return st;
  maxunpool_kernel<<<blocks_for(n_in), kThreads, 0, stream>>>(x, idx, n_in, y, dflt, out);
  return launch_status();
}

int roi_align_f32(const float* x, const float* rois, const int64_t* batch_idx, float* y, const RoiAlignParams& p,
                  StreamT stream) {
  const int64_t total = p.r * p.c * p.oh * p.ow;
  if (total <= 0) return 0;
  roi_align_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, rois, batch_idx, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::more
