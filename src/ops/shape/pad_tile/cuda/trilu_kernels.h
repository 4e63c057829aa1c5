// Host entry point of the Trilu kernel (trilu.cu). Plain C++ like kernels.h; returns the launch status. Trilu's k
// stays on the device: the kernel reads it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Trilu over [batch, rows, cols]; k_dev: device int64 scalar (null: k = 0). elem_size 1, 2, 4, 8.
int trilu(const void* x, void* y, const int64_t* k_dev, int64_t batch, int64_t rows, int64_t cols, bool upper,
          size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
