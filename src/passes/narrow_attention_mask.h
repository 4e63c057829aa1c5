// Attention masks that only vary over the keys, read as key masks. transformers' BertModel exported by
// torch 2.x dynamo builds its SDPA mask as Where(And(T, m), 0, min) where m is the [B, 1, 1, S] padding mask and T a
// constant all-true [1, 1, S, 1] tensor (its query-side mask function): the And broadcasts the key mask over the
// queries, so FusedAttention gets a [B, 1, S, S] mask with a row per query, which the kernels must read per tile. As
// And(true, m) == m wherever it broadcasts, the FusedAttention node reads Where(m, 0, min) instead: the same values,
// broadcast over the queries by the attention itself (a key mask: one bias row per block in the lean kernel). The
// [B, 1, S, S] mask is no longer computed when nothing else reads it.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// For every com.kilnrt:FusedAttention whose mask is Where(And(T, m), a, b) with T a constant whose every element is
// true and a, b one-element float constants: the mask input becomes a new Where(m, a, b) (one per distinct mask). Needs
// no shape of m: And's broadcast already makes m's dims 1 or the mask's. Returns the number of attention nodes
// changed; KILNRT_NO_FUSION=attention-mask skips it.
size_t narrow_attention_masks(ir::Graph& graph);
}  // namespace kilnrt::passes
