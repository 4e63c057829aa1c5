// Batch-first attention without its transposes. torch's nn.MultiheadAttention(batch_first=True) (ViT)
// works in [S, B, E]: `Transpose(x [B, S, E], (1, 0, 2))` before the in-projections and
// `Transpose(out_proj(...) [S, B, E], (1, 0, 2))` after the out-projection, two copies per layer. Everything between
// them is row-wise or a view (GEMMs on the last axis, bias Adds, Reshapes that keep axes 0 and 1, the fused
// attention that reads its operands through perms), so the region can run in [B, S, ...] order instead: the
// projections read x itself, the Reshapes' axes 0 and 1 swap, FusedAttention's q / k / v / out perms absorb the
// swap, and the out-projection becomes `MatMul(Reshape(O, [0, 0, E]), W) -> [B, S, E]`, which the GEMM epilogue
// pass then fuses with the residual Add. Values and summation order are unchanged.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of attention blocks rewritten. Run by fuse_attention after fusing (needs inferred shapes and
// com.kilnrt:FusedAttention nodes); under KILNRT_NO_FUSION's "attention" switch.
size_t drop_batch_first_transposes(ir::Graph& graph);

}  // namespace kilnrt::passes
