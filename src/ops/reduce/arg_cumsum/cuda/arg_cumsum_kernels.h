// Host entry points of the ArgMax / ArgMin and CumSum kernels (arg_cumsum.cu). Plain C++ like kernels.h; each
// launcher returns the launch status (0 = success). CumSum's axis stays on the device: the kernel reads it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/dims.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// ArgMax / ArgMin over the middle dim of float32 [outer, r, inner] -> int64 [outer, inner].
int arg_reduce_f32(const float* x, int64_t* y, int64_t outer, int64_t r, int64_t inner, bool is_max, bool last,
                   StreamT stream);

// CumSum along the axis read from axis_dev (int64 when axis_is_64 else int32; negative allowed). dtype codes:
// 0 float32, 1 int64, 2 int32, 6 float64.
int cumsum(const void* x, void* y, const void* axis_dev, bool axis_is_64, const Dims& shape, bool exclusive,
           bool reverse, int dtype, StreamT stream);

}  // namespace kilnrt::cuda::kernels
