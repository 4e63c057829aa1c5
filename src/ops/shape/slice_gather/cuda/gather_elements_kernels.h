// Host entry point of the GatherElements kernel (gather_elements.cu). Plain C++ like kernels.h; returns the launch
// status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/dims.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// GatherElements: y (shape idx_shape) [i] = x[i with coordinate `axis` replaced by idx[i]]. idx int64 or int32.
int gather_elements(const void* x, const Dims& x_shape, const void* idx, bool idx_is_64, const Dims& idx_shape,
                    int axis, void* y, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
