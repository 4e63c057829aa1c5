// Host entry point of the LinearAttention kernel (linear_attention.cu). It follows the CPU reference
// (src/ops/nn/linear_attention/linear_attention.cc): double accumulation in the same order, float32 I/O (16-bit tensors
// run as float32 islands). Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- LinearAttention
// ------------------------------------------------------------------------------------------------- q [B, T, hq*dk], k
// [B, T, hkv*dk], v [B, T, hkv*dv], past [B, hkv, dk, dv] (null: zeros), decay [B, T, decay_last] (null unless gated),
// beta [B, T, beta_last] (null unless delta); y [B, T, hq*dv], present [B, hkv, dk, dv] (null: not wanted). One thread
// per (batch, kv head, state column); the state of the pairs [pair_begin, pair_end) (pair = b * hkv + h) is kept in
// double in `state` (dk * dv doubles per pair).
struct LinearAttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* past = nullptr;
  const float* decay = nullptr;
  const float* beta = nullptr;
  float* y = nullptr;
  float* present = nullptr;
  double* state = nullptr;
  int64_t batch = 0, steps = 0, hq = 0, hkv = 0, dk = 0, dv = 0, decay_last = 0, beta_last = 0;
  double scale = 1.0;
};
int linear_attention(const LinearAttentionArgs& a, int64_t pair_begin, int64_t pair_end, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
