#include "passes/value_uses.h"

namespace kilnrt::passes {

std::unordered_map<std::string, int> count_value_uses(const ir::Graph& graph) {
  std::unordered_map<std::string, int> uses;
  for (const ir::Node& n : graph.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty()) ++uses[in];
    for (const std::string& v : ir::outer_scope_reads(n)) ++uses[v];
  }
  for (const std::string& o : graph.outputs) ++uses[o];
  return uses;
}

std::string unique_value_name(const ir::Graph& graph, const std::string& base) {
  auto taken = [&](const std::string& s) {
    if (graph.types.count(s) != 0 || graph.constants.count(s) != 0) return true;
    for (const ir::Node& n : graph.nodes)
      for (const std::string& o : n.outputs)
        if (o == s) return true;
    return false;
  };
  if (!taken(base)) return base;
  for (int i = 1;; ++i) {
    const std::string s = base + "_" + std::to_string(i);
    if (!taken(s)) return s;
  }
}

}  // namespace kilnrt::passes
