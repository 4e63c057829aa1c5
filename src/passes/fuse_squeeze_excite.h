// Squeeze-and-excitation fusion: GlobalAveragePool(X) (or ReduceMean over H, W keeping dims) -> FusedConv
// 1x1 C -> Cs (+ bias, activation) -> FusedConv 1x1 Cs -> C (+ bias, gate activation) -> Mul with X becomes one
// com.kilnrt:SqueezeExcite node (ops/nn/squeeze_excite/squeeze_excite.h). Runs after the conv epilogue fusion, which
// made the two FusedConvs. On CUDA the block then takes 2-3 kernel launches instead of 6 or more.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of blocks fused. On by default; KILNRT_SQUEEZE_EXCITE=0 or KILNRT_NO_FUSION=squeeze-excite (or
// =all) skips it.
size_t fuse_squeeze_excite(ir::Graph& graph);
}  // namespace kilnrt::passes
