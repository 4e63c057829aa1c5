// Constant folding: runs nodes whose inputs are all constants on the CPU backend and stores their outputs as
// constants; turns Shape nodes of fully known shapes into constants. Shape computations of dynamic dims stay in
// the graph and are evaluated on the host at run time.
#pragma once
#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of nodes folded. Outputs larger than `max_output_bytes` are not folded (they would bloat the
// engine file: e.g. a ConstantOfShape producing a big zero tensor).
size_t fold_constants(ir::Graph& graph, size_t max_output_bytes = size_t(64) << 20);
}  // namespace kilnrt::passes
