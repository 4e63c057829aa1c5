// Attention fusion: MatMul(Q, K^T) [* or / scalar] [+ mask] -> Softmax(last axis) -> MatMul(., V) [-> Transpose]
// becomes one com.kilnrt:FusedAttention node (src/ops/nn/fused_attention/fused_attention.h). Transposes and scalar Mul
// / Div in front of Q and K^T (and Transposes in front of V) are absorbed into the node's perms and scale, the
// Transpose after the second MatMul into out_perm, so the heads' Reshape -> Transpose copies of exporters disappear.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of attention blocks fused. Set KILNRT_NO_FUSION=attention (or =all) to skip.
size_t fuse_attention(ir::Graph& graph);
}  // namespace kilnrt::passes
