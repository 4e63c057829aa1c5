// Host entry point of the CumProd kernel (cumprod.cu). It follows the CPU reference
// (src/ops/reduce/arg_cumsum/arg_cumsum.cc): double accumulation in the same order, float32 I/O (16-bit tensors run as
// float32 islands). Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/norm_cumprod_dims.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- CumProd
// ----------------------------------------------------------------------------------------------------------- x of
// shape dims[0..rank) (rank <= kMaxNormDims), dtype code 0 float32, 1 int64, 2 int32, 6 float64, along the axis read
// from axis_dev (int64 when axis_is_64 else int32, negative counts from the end; out of range: nothing written, the
// layer checks a known axis on the host). Floats multiply in double, integers wrap (uint64 arithmetic); exclusive
// starts from 1. The axis stays on the device: no host read, graph-capture safe.
int cumprod(const void* x, void* y, const void* axis_dev, bool axis_is_64, int rank, const int64_t* dims,
            bool exclusive, bool reverse, int dtype, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
