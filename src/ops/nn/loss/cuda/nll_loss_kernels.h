// Host entry point of the NegativeLogLikelihoodLoss kernel (nll_loss.cu). Plain C++ like kernels.h; returns the
// launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// NegativeLogLikelihoodLoss on float32 log-probabilities [n, c, inner] and targets [n, inner] (int64 when
// target_is_64 else int32), weight [c] or null. reduction 0 none (y [n, inner]), 1 sum, 2 mean (weighted; y scalar).
// Targets equal to ignore_index (when has_ignore) contribute 0 loss and 0 weight; other out-of-range ones give NaN.
int nll_loss_f32(const float* logp, const void* target, bool target_is_64, const float* weight, float* y, int64_t n,
                 int64_t c, int64_t inner, bool has_ignore, int64_t ignore_index, int reduction, StreamT stream);

}  // namespace kilnrt::cuda::kernels
