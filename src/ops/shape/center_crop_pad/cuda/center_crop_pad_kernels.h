// Host entry point of the CenterCropPad kernel (center_crop_pad.cu). It follows the CPU reference
// (src/ops/shape/center_crop_pad/center_crop_pad.cc) in the order of its sums and its float / double roundings; one
// thread per output element (a gather: no atomics, results do not depend on scheduling). Plain C++ like kernels.h; the
// launcher returns the launch status (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/geom_max_rank.h"

namespace kilnrt::cuda::kernels::geom {

// ---- CenterCropPad (any element size 1/2/4/8): y[i] = x[i - dst0 + src0] inside the copied box, else 0 --------------
struct CropPad {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {};
  int64_t src0[kMaxRank] = {}, dst0[kMaxRank] = {}, len[kMaxRank] = {};
};
int center_crop_pad(const void* x, void* y, size_t elem_size, const CropPad& c, StreamT stream);

}  // namespace kilnrt::cuda::kernels::geom
