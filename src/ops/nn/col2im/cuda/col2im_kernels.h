// Host entry point of the Col2Im kernel (col2im.cu). It follows the CPU reference (src/ops/nn/col2im/col2im.cc) in the
// order of its sums and its float / double roundings; one thread per output element (a gather: no atomics, results do
// not depend on scheduling). Plain C++ like kernels.h; the launcher returns the launch status (0 = success) and never
// synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/geom_max_rank.h"

namespace kilnrt::cuda::kernels::geom {

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

}  // namespace kilnrt::cuda::kernels::geom
