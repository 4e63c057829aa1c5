#include "passes/dead_code.h"

#include <unordered_set>

namespace kilnrt::passes {

size_t eliminate_dead_code(ir::Graph& graph) {
  std::unordered_set<std::string> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> keep(graph.nodes.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const ir::Node& n = graph.nodes[i];
    for (const std::string& o : n.outputs) keep[i] = keep[i] || (!o.empty() && live.count(o));
    if (!keep[i]) continue;
    live.insert(n.inputs.begin(), n.inputs.end());
    for (const std::string& v : ir::outer_scope_reads(n)) live.insert(v);
  }
  std::vector<ir::Node> kept;
  size_t removed = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (keep[i])
      kept.push_back(std::move(graph.nodes[i]));
    else
      ++removed;
  }
  graph.nodes = std::move(kept);
  graph.prune_unused();
  return removed;
}

}  // namespace kilnrt::passes
