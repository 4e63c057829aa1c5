// Host entry point of the AffineGrid kernel (affine_grid.cu). It follows the CPU reference
// (src/ops/nn/affine_grid/affine_grid.cc) in the order of its sums and its float / double roundings; one thread per
// output element (a gather: no atomics, results do not depend on scheduling). Plain C++ like kernels.h; the launcher
// returns the launch status (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::geom {

// ---- AffineGrid (float32): theta [n, nd, nd + 1] -> grid [n, (depth,) height, width, nd]; double accumulation
// ----------
struct AffineGridGeom {
  int nd = 2;  // 2 or 3
  int64_t n = 0, depth = 1, height = 0, width = 0;
  bool align_corners = false;
};
int affine_grid(const float* theta, float* grid, const AffineGridGeom& g, StreamT stream);

}  // namespace kilnrt::cuda::kernels::geom
