// Row selection moved up: a Gather that picks a few rows (tokens) along an axis the ops before it treat
// row by row goes above those ops, so that they compute only the rows that are read. ViT's classifier reads token 0
// (`x[:, 0]`) after the last block's out-projection, residual adds, LayerNorms and MLP: with the Gather above them they
// run on B rows instead of B x 197.
//
// Row-wise ops (the Gather's axis is neither normalised, reduced nor contracted): unary and broadcasting elementwise
// ops, MatMul with a 2-D right-hand side, LayerNormalization, Softmax / LogSoftmax and keepdims Reduce* over other
// axes. The Gather moves only when it is the sole reader of the op's output and picks fewer rows than the axis holds;
// operands that carry the axis get a Gather of their own, identical Gathers of one value are merged (a residual's two
// readers), and a scalar index becomes a one-row Gather with a Squeeze where the Gather was. The results are the same
// per row: only rows nobody reads are no longer computed.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of ops the Gathers moved above (0: graph unchanged). Needs inferred shapes; leaves them
// inferred. KILNRT_NO_FUSION=gather-hoist turns it off.
size_t hoist_gathers(ir::Graph& graph);

}  // namespace kilnrt::passes
