// Host entry point of OptionalHasElement's kernel (optional.cu): a bool constant written on the device.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// *y = v (one bool).
int fill_bool(bool* y, bool v, StreamT stream);

}  // namespace kilnrt::cuda::kernels
