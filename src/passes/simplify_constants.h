// Rewrites of folded constants that shrink what an engine reads per run, run right after constant
// folding:
//  - narrow_broadcast_constants: a float constant operand of Add / Sub / Mul / Div whose slices are equal along a
//    leading axis (all but the last) where the other operand has the same size is stored with size 1 there; the
//    op's broadcast restores it. Exports fold e.g. BERT's token-type embedding of all-zero ids into a full
//    [batch, seq, hidden] tensor, one repeated row.
//  - combine_constant_adds: Add(Add(x, C1), C2) -> Add(x, C1 + C2) for float constants (the inner Add read once):
//    BERT's word + token-type + position embeddings become one add of a [1, seq, hidden] constant.
//  - gathernd_identity_to_reshape: a GatherND whose constant indices list every element of its (fully known) data
//    in order is a Reshape (the mask indexing of transformers' SDPA export).
// Each returns the number of nodes changed; KILNRT_NO_FUSION=constants turns all three off.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

size_t narrow_broadcast_constants(ir::Graph& graph);
size_t combine_constant_adds(ir::Graph& graph);
size_t gathernd_identity_to_reshape(ir::Graph& graph);

// All three, then constant folding of the sums they introduce; returns the number of nodes changed.
size_t simplify_constants(ir::Graph& graph);

}  // namespace kilnrt::passes
