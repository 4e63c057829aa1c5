// Host entry point of the BitwiseNot kernel (bitwise_not.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// y = ~a for n elements of elem_size bytes (1, 2, 4, 8).
int bit_not(const void* a, void* y, int64_t n, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
