// Host entry points of the Reduce* kernels (reduce.cu, reduce_nhwc.cu). Plain C++ like kernels.h; each launcher
// returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Reductions over the middle dim of [outer, r, inner].
enum class ReduceOp : int { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };
// float64 storage and math (every ReduceOp; LogSumExp shifted by the maximum).
int reduce_f64(ReduceOp op, const double* x, double* y, int64_t outer, int64_t r, int64_t inner, StreamT stream);
// Storage dtype dt: 0 float32, 1 float16, 2 bfloat16; accumulation in float32.
int reduce(ReduceOp op, int dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner, StreamT stream);

// Sum (op 0), mean (1), max (2) or min (3) over the middle dim of [outer, r, inner] for inner >= 32, e.g. a spatial
// reduction over NHWC storage (reduce_nhwc.cu); outer <= 65535; dt as above.
int reduce_mid_wide(int op, int dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner, StreamT stream);

}  // namespace kilnrt::cuda::kernels
