// Host entry point of the EyeLike kernel (eye_like.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// EyeLike: y [rows, cols] = (j - i == k) ? one : 0, `one` given as the element's bit pattern.
int eye_like(void* y, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
