// Host entry point of the Pad / Tile kernel (pad.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Pad (mode 0 constant, 1 reflect, 2 edge, 3 wrap) and Tile (wrap with begin 0): y[o] = x[map(o - begin)], the
// constant given as the element's bit pattern. Negative begins crop.
struct PadPlan {
  int rank = 0, mode = 0;
  int64_t out_dims[kMaxDims] = {}, in_dims[kMaxDims] = {}, begin[kMaxDims] = {};
  uint64_t value_bits = 0;
};
int pad(const void* x, void* y, const PadPlan& p, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
