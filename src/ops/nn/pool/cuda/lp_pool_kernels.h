// Host entry point of the LpPool kernel (lp_pool.cu). It follows the CPU reference (src/ops/nn/pool/pool.cc) in the
// order of its sums and its float / double roundings; one thread per output element (a gather: no atomics, results do
// not depend on scheduling). Plain C++ like kernels.h; the launcher returns the launch status (0 = success) and never
// synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::geom {

// ---- LpPool (float32; geometry padded to 3 spatial dims with leading 1s, like ops::nn::Geometry3) -------------------
// y = (sum over the window's taps inside the input of |x|^p)^(1/p), summed in double in tap order.
struct LpPool3 {
  int64_t planes = 0;  // n * c
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};  // begin pads
  double p = 2;
};
int lp_pool3(const float* x, float* y, const LpPool3& g, StreamT stream);

}  // namespace kilnrt::cuda::kernels::geom
