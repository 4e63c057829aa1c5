// Host entry points of the row attention kernels (attention_rows.cu) of ONNX Attention (opsets 23-25) and
// ai.onnx.preview FlexAttention without score_mod / prob_mod, with the formulas of the CPU references
// (src/ops/nn/attention_onnx/attention_onnx.cc, src/ops/nn/flex_attention/flex_attention.cc). Plain C++ like
// kernels.h; each launcher returns the launch status (0 = success). nonpad_kv_seqlen is read by the kernel on the
// device: no host read, no sync.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::attention_rows {

// One attention node. Q/K/V are 4-D [B, heads, seq, size] or 3-D [B, seq, heads * size] (three_d); past_k / past_v
// are 4-D [B, kv_heads, past, size] (null when past == 0). Element type: float32, or float64 when f64.
// Per query row (b, h, i), on the key j of the concatenated [past, new] keys (total = past + kv_seq):
//   s = softcap > 0 ? softcap * tanh(scale * q.k / softcap) : scale * q.k
//   bias = mask(b, h, i, j) (bool: 0 / -inf, float32: added, -inf where j >= mask_dims[3])
//          -inf when causal and j > i + offset, outside the window [-right, left] of i + offset - j, or j >= nonpad[b]
//   offset = nonpad ? nonpad[b] - q_seq : past
//   p = softmax(s + bias) (all zero when every bias is -inf), y = p V; query head h reads kv head h / (Hq / Hkv).
// qk_out (mode 0/1: s, 2: s + bias, 3: p) is [B, Hq, Sq, total]. Math in double.
struct AttnArgs {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, past = 0, head = 0, v_head = 0;
  bool three_d = false;
  bool f64 = false;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* past_k = nullptr;
  const void* past_v = nullptr;
  bool has_mask = false;  // an attn_mask input (mask may be null when it has no element)
  const void* mask = nullptr;
  bool mask_bool = false;  // else float32
  int64_t mask_dims[4] = {1, 1, 1, 1}, mask_strides[4] = {0, 0, 0, 0};
  const int64_t* nonpad = nullptr;  // [B] on the device, or null
  bool causal = false;
  int64_t left = -1, right = -1;
  double softcap = 0, scale = 1;
  int mode = 0;
  void* y = nullptr;          // [B, Hq, Sq, Dv] or [B, Sq, Hq * Dv]
  void* qk_out = nullptr;     // optional
  double* scratch = nullptr;  // scratch_rows * max(total, 1) doubles (one score row per block)
  int64_t scratch_rows = 0;
};
int attention(const AttnArgs& a, StreamT stream);

// present = concat(past [B, H, past, size] (may be null when past == 0), cur (3-D or 4-D like AttnArgs)) along the
// sequence: [B, H, past + seq, size]. Element type float32 or float64 (f64).
int present_concat(const void* past, const void* cur, void* out, int64_t batch, int64_t heads, int64_t past_len,
                   int64_t seq, int64_t size, bool three_d, bool f64, StreamT stream);

}  // namespace kilnrt::cuda::kernels::attention_rows
