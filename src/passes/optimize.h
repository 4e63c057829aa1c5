// The pass pipeline the builder runs: shape inference, constant folding (to a fixed point), dead-code elimination.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kilnrt::passes {
struct OptimizeReport {
  size_t nodes_before = 0, nodes_after = 0, folded = 0, removed = 0;
  std::string summary() const;
};
OptimizeReport optimize_graph(ir::Graph& graph);
}  // namespace kilnrt::passes
