// GELU fusion: the erf form x * 0.5 * (1 + erf(x / sqrt(2))) that exporters write out (Div or Mul, Erf, Add, Mul,
// Mul, with the 0.5 in any of the three places) and the tanh form
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (x^3 as Pow(x, 3) or x*x*x) become one
// com.kilnrt:Gelu node (attribute approximate "none" | "tanh", the semantics of ONNX Gelu-20).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of GELUs fused. KILNRT_NO_FUSION=gelu (or =all) skips it.
size_t fuse_gelu(ir::Graph& graph);
}  // namespace kilnrt::passes
