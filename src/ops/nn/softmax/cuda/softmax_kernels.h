// Host entry points of the Softmax / LogSoftmax kernels (softmax.cu). Plain C++ like kernels.h; each launcher
// returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Softmax / LogSoftmax (log) over the middle dim of [outer, n, inner], float32.
int softmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream);
// The same over storage dtype dt (0 float32, 1 float16, 2 bfloat16); math in float32.
int softmax(int dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream);

}  // namespace kilnrt::cuda::kernels
