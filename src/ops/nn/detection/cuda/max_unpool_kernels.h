// Host entry point of the MaxUnpool kernels (max_unpool.cu). Plain C++ like kernels.h; returns the launch status
// (0 = success); nothing here synchronises or reads device memory on the host (graph-capture safe).
#pragma once
#include <cstdint>

#include "cuda/kernels/dims_mask.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// MaxUnpool of float32: y (shape `out`) zeroed, then y[idx[i] re-laid from `dflt` to `out`] = x[i]. Indices
// outside dflt are skipped (the CPU reference refuses them).
int maxunpool_f32(const float* x, const int64_t* idx, int64_t n_in, float* y, const DimsMask& dflt, const DimsMask& out,
                  StreamT stream);

}  // namespace kilnrt::cuda::kernels
