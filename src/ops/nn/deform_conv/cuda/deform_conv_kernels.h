// Host entry point of the DeformConv kernel (deform_conv.cu). It follows the CPU reference
// (src/ops/nn/deform_conv/deform_conv.cc) in the order of its sums and its float / double roundings; one thread per
// output element (a gather: no atomics, results do not depend on scheduling). Plain C++ like kernels.h; the launcher
// returns the launch status (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::geom {

// ---- DeformConv (float32, 2-D)
// ---------------------------------------------------------------------------------------- y [n, oc, oh, ow] = bias +
// sum over (input channel of the group, tap) of w * mask * bilinear(x at the moved tap), bilinear with zero outside;
// sums in double in the CPU reference's order (channel, then tap). One thread per output.
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

}  // namespace kilnrt::cuda::kernels::geom
