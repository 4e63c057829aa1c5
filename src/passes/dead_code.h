// Dead-code elimination: removes nodes none of whose outputs reach a graph output, then unused constants/types.
#pragma once
#include "ir/graph.h"

namespace kilnrt::passes {
size_t eliminate_dead_code(ir::Graph& graph);
}  // namespace kilnrt::passes
