// Layer scale folding (ConvNeXt's CNBlock, CaiT-style layer scales): a Linear whose output is permuted,
// scaled per output channel and added to a skip connection,
//   Y = MatMul(X, W) [+ b] -> [Transpose(P)] -> Mul(., gamma) -> Add(., R)
// with W [K, N], b [N] and gamma float32 constants, gamma per output channel (it varies only along the dim that P
// moves Y's last axis to, or is one scalar), becomes
//   MatMul(X, W * diag(gamma)) [+ gamma * b] -> Add(., Transpose(R, P^-1)) [-> Transpose(P)]
// so that fuse_gemm_epilogues makes the MatMul, the bias and the residual Add ONE com.kilnrt:FusedMatMul (the skip
// connection as cuBLASLt's C operand) and the scale costs nothing. The permutation moves to the skip connection:
// with the CUDA plan's NHWC storage (backends/cuda/layout_plan.h) both Transposes of ConvNeXt's (0,3,1,2) are views
// of NHWC / plain memory, so no copy is added; in an NCHW plan they are two strided copies in place of the old
// Transpose copy and one Mul+Add kernel. Without a Transpose only the Mul goes.
//
// Numerics: W * gamma and gamma * b are computed in double and stored as float32 (one rounding, like the product the
// unfused graph computes at run time). In 16-bit engines the folded weights are rounded to 16 bits once; where
// |W * gamma| falls below float16's normal range (e.g. torchvision's untrained layer_scale = 1e-6) the products lose
// relative precision, but their absolute error (<= 2^-25 each) stays far below one unit of the residual stream they
// are added to. Skipped, graph unchanged, when anything does not fit: non-float32 or non-constant W / b / gamma,
// non-finite gamma, a value of the chain read elsewhere or a graph output, a residual of another shape (broadcast)
// or a constant residual.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of layer scales folded. Needs inferred shapes; run before fuse_gemm_epilogues, then
// infer_shapes (the new values have no types yet). KILNRT_NO_FUSION=layer-scale (or =all) skips it.
size_t fold_layer_scale(ir::Graph& graph);
}  // namespace kilnrt::passes
