// Host entry point of the fused attention kernels (attention.cu): O = softmax(scale * Q K^T + mask) V for
// every (b0, b1) batch entry, operands addressed through strides so that transposed head layouts are read in place.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

struct AttentionArgs {
  int dt = 0;  // storage dtype of Q, K, V, mask, O: 0 float32, 1 float16, 2 bfloat16 (math in float32)
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // optional
  void* o = nullptr;
  int64_t b0 = 1, b1 = 1, sq = 0, sk = 0, d = 0, dv = 0;
  // Strides in elements over (b0, b1, row, col); the mask's over (b0, b1, query, key), 0 where it broadcasts.
  int64_t qs[4] = {}, ks[4] = {}, vs[4] = {}, ms[4] = {}, os[4] = {};
  float scale = 1.f;
  int zero_masked_rows = 0;  // 1: a row whose scores are all -inf outputs zeros (else uniform weights)
};

constexpr int64_t kAttentionMaxHead = 128;  // largest D / Dv the kernels take
// 16-bit storage: the FlashAttention-2-style mma.sync kernel (attention_mma.h) where its preconditions hold (D == Dv
// in {32, 64, 128}, rows movable with 16-byte loads), else tensor cores through WMMA (D, Dv multiples of 16); a
// float32 SIMT kernel otherwise. All use an online softmax: no Sq x Sk scores in memory, no allocation.
// A row whose scores are all -inf gets uniform weights. Returns the launch status.
int attention(const AttentionArgs& a, StreamT stream);
// Whether attention() takes the tensor-core path for these arguments.
bool attention_uses_tensor_cores(const AttentionArgs& a);

}  // namespace kilnrt::cuda::kernels
