// Host entry point of the MeanVarianceNormalization kernel (mvn.cu). Plain C++ like kernels.h; returns the launch
// status (0 = success); nothing here synchronises or reads device memory on the host (graph-capture safe).
#pragma once
#include <cstdint>

#include "cuda/kernels/dims_mask.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// MeanVarianceNormalization of float32 x: each group (index over the unflagged dims) normalised over the flagged
// dims: (x - mean) / (sqrt(max(var, 0)) + 1e-9), statistics in double. groups * count == numel.
int mvn_f32(const float* x, float* y, const DimsMask& shape, int64_t groups, int64_t count, StreamT stream);

}  // namespace kilnrt::cuda::kernels
