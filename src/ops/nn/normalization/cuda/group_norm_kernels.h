// Host entry point of the GroupNormalization / InstanceNormalization kernel (group_norm.cu). Plain C++ like
// kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Group normalisation of float32 [n, channels, spatial] with `groups` groups: each (n, g) row is normalised over its
// channels/groups * spatial elements, then scaled: per-channel scale/bias when per_channel, else per group.
// InstanceNormalization is groups == channels.
int group_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                   int64_t spatial, int64_t groups, bool per_channel, float eps, StreamT stream);

}  // namespace kilnrt::cuda::kernels
