// Host entry point of the ReverseSequence kernel (reverse_sequence.cu). Plain C++ like kernels.h; returns the launch
// status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// ReverseSequence over x viewed as [d0, d1, inner] with the time axis 0 (batch 1) or 1 (batch 0); lens int64 device.
int reverse_sequence(const void* x, const int64_t* lens, void* y, int64_t d0, int64_t d1, int64_t inner,
                     bool time_first, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
