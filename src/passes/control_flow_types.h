// Output dtypes of If / Loop / Scan nodes whose bodies leave their outputs undeclared (ONNX function-expanded
// bodies, e.g. test_range_*_expanded, test_linear_attention_*_expanded): the op schemas take a control-flow output's
// type from the body's declared output, so such outputs had no dtype and every backend that places nodes by dtype
// (CUDA) refused their consumers. Used by infer_shapes (shape_inference.cc).
#pragma once
#include "ir/graph.h"

namespace kilnrt::passes {

// Sets the dtype of each output of `node` (If / Loop / Scan) that `graph` types as undefined, from the body inferred
// as a graph of its own (formal inputs without a declared dtype get the node's input dtypes; outer-scope values their
// types in `graph`). An output stays undefined where the bodies do not tell (If branches that disagree, a body whose
// inference fails). Returns the number of outputs typed.
int type_control_flow_outputs(const ir::Node& node, ir::Graph& graph);

}  // namespace kilnrt::passes
