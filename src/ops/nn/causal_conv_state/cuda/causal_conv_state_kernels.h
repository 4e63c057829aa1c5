// Host entry point of the CausalConvWithState kernel (causal_conv_state.cu). It follows the CPU reference
// (src/ops/nn/causal_conv_state/causal_conv_state.cc): double accumulation in the same order, float32 I/O (16-bit
// tensors run as float32 islands). Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- CausalConvWithState
// ----------------------------------------------------------------------------------------------- x [B, C, L], w [C, 1,
// K], bias [C] (null: 0), past [B, C, K-1] (null: zeros); y [B, C, L], present [B, C, K-1] (null: not wanted). silu: y
// * sigmoid(y).
struct CausalConvArgs {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  const float* past = nullptr;
  float* y = nullptr;
  float* present = nullptr;
  int64_t batch = 0, channels = 0, length = 0, kernel = 1;
  bool silu = false;
};
int causal_conv(const CausalConvArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
