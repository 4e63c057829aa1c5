// The AffineGrid kernel (affine_grid_kernels.h): one thread per output element (grid-stride loop), following the CPU
// reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/affine_grid/cuda/affine_grid_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- AffineGrid ----------------------------------------------------------------------------------------------------
__device__ __forceinline__ double grid_coord(int64_t i, int64_t n, bool align) {
  if (align) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

__global__ void affine_grid_kernel(const float* theta, float* grid, AffineGridGeom g, int64_t points) {
  const int nd = g.nd;
  KILNRT_GRID_LOOP(i, points) {
    int64_t r = i;
    const int64_t x = r % g.width;
    r /= g.width;
    const int64_t yy = r % g.height;
    r /= g.height;
    const int64_t z = r % g.depth, b = r / g.depth;
    const double p[4] = {grid_coord(x, g.width, g.align_corners), grid_coord(yy, g.height, g.align_corners),
                         nd == 3 ? grid_coord(z, g.depth, g.align_corners) : 1.0, 1.0};
    const float* t = theta + b * nd * (nd + 1);
    for (int row = 0; row < nd; ++row) {
      double acc = 0.0;
      for (int c = 0; c <= nd; ++c) acc += static_cast<double>(t[row * (nd + 1) + c]) * p[c == nd ? 3 : c];
      grid[i * nd + row] = static_cast<float>(acc);
    }
  }
}

}  // namespace

int affine_grid(const float* theta, float* grid, const AffineGridGeom& g, StreamT stream) {
  if (g.nd != 2 && g.nd != 3) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t points = g.n * g.depth * g.height * g.width;
  if (points <= 0) return 0;
  affine_grid_kernel<<<blocks_for(points), kThreads, 0, stream>>>(theta, grid, g, points);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
