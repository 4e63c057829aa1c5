// Host entry points of the geometry kernels (geom.cu): LpPool, CenterCropPad, Col2Im (N-D), AffineGrid
// (2-D / 3-D), DeformConv (2-D) and TensorScatter. Each follows its CPU reference (src/ops/nn/pool/pool.cc,
// src/ops/shape/center_crop_pad/center_crop_pad.cc, src/ops/nn/col2im/col2im.cc, affine_grid.cc, deform_conv.cc,
// src/ops/shape/tensor_scatter/tensor_scatter.cc) in the order of its sums and its float / double roundings. One thread per output
// element (a gather: no atomics, results do not depend on scheduling). Plain C++ like kernels.h; each launcher returns
// the launch status (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::geom {

constexpr int kMaxRank = 8;  // CenterCropPad / TensorScatter ranks, Col2Im spatial dims

// ---- LpPool (float32; geometry padded to 3 spatial dims with leading 1s, like ops::nn::Geometry3) -------------------
// y = (sum over the window's taps inside the input of |x|^p)^(1/p), summed in double in tap order.
struct LpPool3 {
  int64_t planes = 0;  // n * c
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};  // begin pads
  double p = 2;
};
int lp_pool3(const float* x, float* y, const LpPool3& g, StreamT stream);

// ---- CenterCropPad (any element size 1/2/4/8): y[i] = x[i - dst0 + src0] inside the copied box, else 0 --------------
struct CropPad {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {};
  int64_t src0[kMaxRank] = {}, dst0[kMaxRank] = {}, len[kMaxRank] = {};
};
int center_crop_pad(const void* x, void* y, size_t elem_size, const CropPad& c, StreamT stream);

// ---- Col2Im (float32, nd spatial dims): x [batch, channels * k_size, l_size] -> y [batch, channels, *image] ---------
// Each image element sums, in increasing tap order k, the column value of the one block position whose tap k lands on
// it (float sums, as the CPU reference's scatter adds them in that order).
struct Col2ImGeom {
  int nd = 0;
  int64_t batch = 0, channels = 0, k_size = 1, l_size = 1;
  int64_t image[kMaxRank] = {}, block[kMaxRank] = {}, blocks[kMaxRank] = {};
  int64_t dil[kMaxRank] = {}, stride[kMaxRank] = {}, pad[kMaxRank] = {};  // pad: begin pads
};
int col2im(const float* x, float* y, const Col2ImGeom& g, StreamT stream);

// ---- AffineGrid (float32): theta [n, nd, nd + 1] -> grid [n, (depth,) height, width, nd]; double accumulation ----------
struct AffineGridGeom {
  int nd = 2;  // 2 or 3
  int64_t n = 0, depth = 1, height = 0, width = 0;
  bool align_corners = false;
};
int affine_grid(const float* theta, float* grid, const AffineGridGeom& g, StreamT stream);

// ---- DeformConv (float32, 2-D) ----------------------------------------------------------------------------------------
// y [n, oc, oh, ow] = bias + sum over (input channel of the group, tap) of w * mask * bilinear(x at the moved tap),
// bilinear with zero outside; sums in double in the CPU reference's order (channel, then tap). One thread per output.
struct DeformConvArgs {
  const float* x = nullptr;       // [n, c, h, w]
  const float* weight = nullptr;  // [oc, c / group, kh, kw]
  const float* offset = nullptr;  // [n, og * kh * kw * 2, oh, ow]
  const float* bias = nullptr;    // [oc] or null
  const float* mask = nullptr;    // [n, og * kh * kw, oh, ow] or null
  float* y = nullptr;
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, offset_group = 1;
  int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pad[2] = {0, 0};  // pad: begin pads (top, left)
};
int deform_conv2d(const DeformConvArgs& a, StreamT stream);

// ---- TensorScatter (any element size 1/2/4/8) ---------------------------------------------------------------------------
// cache / y viewed as [batch, prefix, max_len, inner], update as [batch, prefix, len, inner]. y = cache, except that
// y[b, p, pos] = update[b, p, s] where pos = write_indices[b] + s (circular: modulo max_len). write_indices (int64 [batch]
// on the device, null = zeros) is read by the kernel; in linear mode positions past the cache are not written (the CPU
// reference refuses them: see the layer).
struct ScatterGeom {
  int64_t batch = 0, prefix = 1, max_len = 0, len = 0, inner = 1;
  bool circular = false;
};
int tensor_scatter(const void* cache, const void* update, const int64_t* write_indices, void* y, size_t elem_size,
                   const ScatterGeom& g, StreamT stream);

}  // namespace kilnrt::cuda::kernels::geom
