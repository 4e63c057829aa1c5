// Shape inference: asks each op's shape function for its outputs' dtype and symbolic shape, in topological order.
#pragma once
#include "ir/graph.h"

namespace kilnrt::passes {
// Fills graph.types for every node output. Declared types (ONNX value_info / outputs) are merged: a dim the op
// infers wins; a dim it leaves unknown keeps the declared value or name. Throws naming the node on a mismatch
// the shape function detects (e.g. channel counts).
void infer_shapes(ir::Graph& graph);
}  // namespace kilnrt::passes
