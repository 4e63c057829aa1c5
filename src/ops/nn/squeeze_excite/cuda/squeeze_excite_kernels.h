// com.kilnrt:SqueezeExcite on CUDA (ops/nn/squeeze_excite/squeeze_excite.h): Y = X * gate(W2 act(W1 mean_hw(X) + B1) +
// B2) in three kernel launches spread over many CTAs (partial channel sums; W1 rows per CTA; per channel tile x
// position strip: W2 rows, then the scaling) instead of the six of the unfused block (reduce, two cuDNN 1x1 convs with
// their epilogue kernels, the broadcasting Mul). X / Y are NCHW or NHWC (nhwc), 16-byte vector loads where C (NHWC) or
// H*W (NCHW) allow. float32 math throughout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

struct SqueezeExciteArgs {
  int dt = 0;  // storage of X, Y, W1, B1, W2, B2: 0 float32, 1 float16, 2 bfloat16
  const void* x = nullptr;
  void* y = nullptr;
  const void* w1 = nullptr;  // [cs, c]
  const void* b1 = nullptr;  // [cs] or null
  const void* w2 = nullptr;  // [c, cs]
  const void* b2 = nullptr;  // [c] or null
  int64_t n = 0, c = 0, hw = 0, cs = 0;
  bool nhwc = false;
  int act = 0, gate = 0;  // ops::nn::FusedActivation codes (conv_activation.cuh)
  float act_a = 0.f, act_b = 0.f, gate_a = 0.f, gate_b = 0.f;
  void* workspace = nullptr;  // float32 scratch: h, then the partial sums
  size_t workspace_bytes = 0;
};

// Largest C and Cs the kernels take (shared memory of the mat-vec CTA).
constexpr int64_t kSqueezeExciteMaxC = 4096, kSqueezeExciteMaxCs = 2048;

// Enqueues the block on `stream`; returns 0 or the launch status. cudaErrorInvalidValue for sizes out of range or
// a workspace too small for n * (c + cs) floats (+ alignment).
int squeeze_excite(const SqueezeExciteArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels
