// Packed Q / K / V projection: a com.kilnrt:FusedAttention whose Q, K and V each come from a projection
// of one input x,
//   MatMul(x, Wi const [K, Ni]) [+ bi const [Ni]] -> Reshape (one or more) -> [L..., Hi, D]  (i = q, k, v),
// every value on the way read only by the next step, becomes
//   MatMul(x, [Wq | Wk | Wv]) [+ [bq | bk | bv]] -> Reshape([0, .., 0, Hq + Hk + Hv, D]) -> FusedAttention
// reading that one value three times with q_part / k_part / v_part (its head ranges, read in place: no copy). One
// GEMM with N = Nq + Nk + Nv instead of three: at batch 1 the projections are launch-bound. BERT (transformers'
// BertSelfAttention: three Linear layers) and torch's MultiheadAttention (its packed in-projection, split into
// three GEMMs by split_packed_projection so that fuse_attention and batch_first_attention see the same form) take
// it. The unpacked projections die (dead code).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of attention nodes whose projections were packed. Run by fuse_attention after fusing;
// KILNRT_NO_FUSION=qkv-pack (or "attention", or "all") turns it off.
size_t pack_qkv_projections(ir::Graph& graph);

}  // namespace kilnrt::passes
