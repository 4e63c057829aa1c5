// LayerNorm fusion for exports below opset 17 (no LayerNormalization op there):
// ReduceMean(x, last axis) -> Sub -> Pow(., 2) or Mul(d, d) -> ReduceMean -> Add(eps) -> Sqrt -> Div
// [-> Mul(const scale) [-> Add(const bias)]] becomes one com.kilnrt:LayerNormalization(x [, scale [, bias]]) with
// attributes axis = -1 and epsilon (ONNX LayerNormalization-17 semantics, one output). The CUDA backend runs it on
// the LayerNormalization kernel.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of LayerNorms fused. KILNRT_NO_FUSION=layernorm (or =all) skips it.
size_t fuse_layernorm(ir::Graph& graph);
}  // namespace kilnrt::passes
