// Packed-projection selects: torch's MultiheadAttention splits its packed in-projection with
//   Reshape([S, B, 3, E]) -> Unsqueeze(0) -> Transpose(0, -2) -> Squeeze(-2) -> Gather(index q/k/v, axis 0),
// which copies the whole projection once (the Transpose) and each third again (the Gathers). This pass rewrites a
// Gather on a constant scalar index of such a Squeeze / Unsqueeze / Transpose chain, when the chain keeps the other
// axes in order, as Slice(base, [c, c + 1) on the selected axis) -> Reshape: one strided copy of the third that is
// needed, and the Transpose becomes dead. Only when every reader of the chain's end is such a Gather (opset >= 13).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of Gathers rewritten. Runs under KILNRT_NO_FUSION's "attention" switch (fuse_attention calls it).
size_t select_packed_qkv(ir::Graph& graph);

}  // namespace kilnrt::passes
