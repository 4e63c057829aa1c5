// Patch-embedding convolutions as a GEMM. A Conv whose kernel equals its stride (no padding, no dilation,
// one group) cuts the image into non-overlapping patches; when its output is only read as tokens,
// `Transpose(Reshape(Conv(x), [N, O, L]), (0, 2, 1))` (ViT's patch embedding), it is rewritten as
//   Reshape(x, [N, C, Hp, kh, Wp, kw]) -> Transpose(0, 2, 4, 1, 3, 5) -> Reshape([N, L, C*kh*kw])
//   -> MatMul(., W^T [C*kh*kw, O]) [-> Add(bias)]
// (one copy of the image and one GEMM that the epilogue pass fuses with the bias) instead of a convolution and a
// token transpose. Exact: the same products, summed in another order.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of convolutions rewritten. Needs inferred shapes (x's C, H, W and the weight constant).
size_t patchify_conv(ir::Graph& graph);

}  // namespace kilnrt::passes
