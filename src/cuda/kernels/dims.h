// A contiguous row-major shape of up to kMaxDims dims, passed by value to the kernels that index a tensor by
// coordinates (CumSum, GatherElements, GatherND, ScatterElements, ScatterND). Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Dims of up to kMaxDims (row-major, contiguous).
struct Dims {
  int rank = 0;
  int64_t d[kMaxDims] = {};
};

}  // namespace kilnrt::cuda::kernels
