// Host entry points of the CUDA kernels of MeanVarianceNormalization, OneHot, MaxUnpool and RoiAlign (misc_more.cu).
// Plain C++ like kernels.h; each launcher returns the launch status (0 = success); nothing here synchronises or
// reads device memory on the host (graph-capture safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::more {

// ---- misc_more.cu -------------------------------------------------------------------------------------------------

// Shape of up to kMaxDims dims with a per-dim flag (MVN: reduced dims).
struct DimsMask {
  int rank = 0;
  int64_t d[kMaxDims] = {};
  int flag[kMaxDims] = {};
};
// MeanVarianceNormalization of float32 x: each group (index over the unflagged dims) normalised over the flagged
// dims: (x - mean) / (sqrt(max(var, 0)) + 1e-9), statistics in double. groups * count == numel.
int mvn_f32(const float* x, float* y, const DimsMask& shape, int64_t groups, int64_t count, StreamT stream);

// OneHot: y [outer, depth, inner] = values[1] where k == idx[o, i] (negative idx + depth) else values[0].
// idx_code: 0 int64, 1 int32, 2 float32; values: 2 elements of elem_size bytes (1, 2, 4, 8).
int onehot(const void* idx, int idx_code, const void* values, void* y, int64_t outer, int64_t depth, int64_t inner,
           size_t elem_size, StreamT stream);

// MaxUnpool of float32: y (shape `out`) zeroed, then y[idx[i] re-laid from `dflt` to `out`] = x[i]. Indices
// outside dflt are skipped (the CPU reference refuses them).
int maxunpool_f32(const float* x, const int64_t* idx, int64_t n_in, float* y, const DimsMask& dflt,
                  const DimsMask& out, StreamT stream);

// RoiAlign of float32 x [N, C, H, W], rois [R, 4], batch indices int64 [R] -> y [R, C, oh, ow].
struct RoiAlignParams {
  int64_t n = 0, c = 0, h = 0, w = 0, r = 0, oh = 1, ow = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = true;
  bool max_mode = false;
};
int roi_align_f32(const float* x, const float* rois, const int64_t* batch_idx, float* y, const RoiAlignParams& p,
                  StreamT stream);

}  // namespace kilnrt::cuda::kernels::more
