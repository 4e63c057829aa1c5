// Host entry point of the RotaryEmbedding kernel (rotary_embedding.cu), with the formulas of the CPU reference
// (src/ops/nn/rotary_embedding/rotary_embedding.cc). Plain C++ like kernels.h; returns the launch status (0 =
// success). position_ids are read by the kernel on the device: no host read, no sync.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// RotaryEmbedding on float32: x [B, H, S, D] (or 3-D [B, S, H*D]); caches [rows, rd/2]; the row of (b, t) is
// position_ids[b * S + t] (device int64) or, without them, b * S + t. A position outside [0, cache_rows) gives NaN.
struct RotaryArgs {
  const float* x = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
  const int64_t* pos = nullptr;
  float* y = nullptr;
  int64_t batch = 0, heads = 0, seq = 0, head = 0, rd = 0, cache_rows = 0;
  bool three_d = false, interleaved = false;
};
int rotary(const RotaryArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels
