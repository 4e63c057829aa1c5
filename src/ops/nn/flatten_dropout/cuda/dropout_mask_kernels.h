// Host entry point of Dropout's mask kernel (dropout_mask.cu). Plain C++ like kernels.h; each launcher returns the
// launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::dropout {

// ---- Dropout (inference, or training with ratio 0): y = x, mask = true
// -------------------------------------------------
int dropout_identity_mask(const void* x, void* y, size_t elem_size, bool* mask, int64_t n, StreamT stream);

}  // namespace kilnrt::cuda::kernels::dropout
