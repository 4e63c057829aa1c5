// Embedding + LayerNorm fusion: the start of BERT-like encoders,
//   Gather(table [V, H] constant, ids, axis 0) -> Add(., addend constant) -> LayerNormalization(last axis, scale [,
//   bias])
// (the Add's operands in either order; ONNX LayerNormalization-17 with only its Y output, or com.kilnrt's), becomes
// one com.kilnrt:EmbedLayerNorm(ids, table, addend, scale [, bias]) with the LayerNorm's epsilon: one pass over the
// rows instead of three (a gather, an add and a LayerNorm, each reading and writing the whole [.., H] tensor).
// The addend must broadcast along the leading dims only: its shape, without leading 1s, is a suffix of the output
// shape [ids..., H] (position + token-type embeddings: [1, S, H] or [S, H]). The gathered and added values must have
// no other reader. KILNRT_NO_FUSION=embed-layernorm (or =all) skips it.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of fusions.
size_t fuse_embed_layernorm(ir::Graph& graph);
}  // namespace kilnrt::passes
