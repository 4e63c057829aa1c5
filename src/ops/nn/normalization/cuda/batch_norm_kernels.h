// Host entry points of the BatchNormalization kernels: the per-channel affine of the folded inference form
// (channel_affine.cu) and the float32 kernel with parameters on the device, inference or training statistics
// (batch_norm.cu). Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// y[n,c,...] = x[n,c,...] * a[c] + b[c] over [outer=N, C, inner=spatial]; storage dtype dt (0 float32, 1 float16,
// 2 bfloat16), a / b float32.
int channel_affine(int dt, const void* x, const float* a, const float* b, void* y, int64_t outer, int64_t c,
                   int64_t inner, StreamT stream);

}  // namespace kilnrt::cuda::kernels

namespace kilnrt::cuda::kernels::bn {

// ---- BatchNormalization (float32; parameters [c] on the device)
// ------------------------------------------------------ x [n, c, size]. training: batch statistics (population
// variance, double sums) replace mean / var, and running_mean / running_var (may be null) get mean * momentum + batch *
// (1 - momentum). One block per channel.
struct BatchNormArgs {
  const float* x = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  float* y = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  int64_t n = 0, c = 0, size = 0;
  double eps = 1e-5, momentum = 0.9;
  bool training = false;
};
int batch_norm_f32(const BatchNormArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels::bn
