// Host entry point of the LRN kernel (lrn.cu). Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// LRN across channels of float32 [n, c, spatial].
int lrn_f32(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha, float beta,
            float bias, StreamT stream);

}  // namespace kilnrt::cuda::kernels
