// Conv + BatchNormalization folding: a Conv (or ConvTranspose) whose only reader is an inference-mode
// BatchNormalization with constant parameters becomes one Conv with scaled weights and a shifted bias:
//   s[m] = scale[m] / sqrt(var[m] + eps),  W'[m, ...] = W[m, ...] * s[m],  B'[m] = (B[m] - mean[m]) * s[m] + beta[m]
// (ConvTranspose: the output channel is W's dim 1 within each group). Exact up to float32 rounding (computed in
// double). Skipped, leaving the graph as it was, when anything does not fit: non-constant or non-float32
// parameters, training mode, BN outputs besides Y, a Conv output read elsewhere, or a non-finite s (var + eps == 0).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of BatchNormalization nodes folded away. Needs inferred shapes (run infer_shapes first).
// KILNRT_NO_FUSION=conv-bn (or =all) skips it.
size_t fold_conv_batchnorm(ir::Graph& graph);
}  // namespace kilnrt::passes
