// Host entry point of the RMSNormalization kernel (rms_norm.cu). It follows the CPU reference
// (src/ops/nn/normalization/normalization.cc): double accumulation in the same order, float32 I/O (16-bit tensors run
// as float32 islands). Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/norm_cumprod_dims.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- RMSNormalization
// -------------------------------------------------------------------------------------------------- x [rows, len] (len
// = product of the normalized dims); scale indexed through norm dims / strides (0 = broadcast).
struct RmsNormArgs {
  const float* x = nullptr;
  const float* scale = nullptr;
  float* y = nullptr;
  int64_t rows = 0, len = 0;
  int norm_rank = 0;
  int64_t norm_dims[kMaxNormDims] = {};
  int64_t scale_strides[kMaxNormDims] = {};
  double eps = 1e-5;
};
int rms_norm(const RmsNormArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
