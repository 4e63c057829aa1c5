// A row-major shape of up to kMaxDims dims with one flag per dim, passed by value to the kernels of
// MeanVarianceNormalization (flag: reduced dim; ops/math/linalg/cuda/mvn_kernels.h) and MaxUnpool (flags unused;
// ops/nn/detection/cuda/max_unpool_kernels.h). Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Shape of up to kMaxDims dims with a per-dim flag (MVN: reduced dims).
struct DimsMask {
  int rank = 0;
  int64_t d[kMaxDims] = {};
  int flag[kMaxDims] = {};
};

}  // namespace kilnrt::cuda::kernels
