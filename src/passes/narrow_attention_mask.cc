// See narrow_attention_mask.h.
#include "passes/narrow_attention_mask.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/logging.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

// A bool constant whose every element is true, with at least one element.
bool all_true_constant(const ir::Graph& g, const std::string& value) {
  auto it = g.constants.find(value);
  if (it == g.constants.end() || it->second.numel() == 0 || it->second.dtype() != DType::kBool) return false;
  const auto* p = static_cast<const uint8_t*>(it->second.raw());
  for (int64_t i = 0; i < it->second.numel(); ++i)
    if (p[i] == 0) return false;
  return true;
}

size_t rank_or(const ir::Graph& g, const std::string& value, size_t fallback) {
  const ir::SymShape* s = shape_of(g, value);
  return s ? s->size() : fallback;
}

}  // namespace

size_t narrow_attention_masks(ir::Graph& graph) {
  if (!fusion_enabled("attention-mask")) return 0;
  std::map<std::string, std::string> narrowed;  // old mask -> the new Where's output
  std::vector<ir::Node> added;
  size_t changed = 0;
  {
    const GraphIndex ix(graph);
    for (ir::Node& f : graph.nodes) {
      if (f.op_type != "FusedAttention" || f.inputs.size() < 4 || f.inputs[3].empty()) continue;
      const std::string mask = f.inputs[3];
      auto done = narrowed.find(mask);
      if (done != narrowed.end()) {
        f.inputs[3] = done->second;
        ++changed;
        continue;
      }
      const ir::Node* w = ix.producer(mask);
      // The mask is float (the fusion matched its dtype to the scores'), so are Where's two values.
      if (!is_op(w, "Where") || w->inputs.size() != 3 || !scalar_constant(graph, w->inputs[1]) ||
          !scalar_constant(graph, w->inputs[2]))
        continue;
      const ir::Node* a = ix.producer(w->inputs[0]);
      if (!is_op(a, "And") || a->inputs.size() != 2) continue;
      std::string m;
      for (int i = 0; i < 2 && m.empty(); ++i)
        if (all_true_constant(graph, a->inputs[i]) && !graph.is_constant(a->inputs[1 - i])) m = a->inputs[1 - i];
      if (m.empty()) continue;
      // The scalars must not raise the rank above the old mask's (they were part of its broadcast, so they do not
      // when the ranks are known).
      const size_t mask_rank = rank_or(graph, mask, 0);
      if (mask_rank == 0 || rank_or(graph, w->inputs[1], 99) > mask_rank ||
          rank_or(graph, w->inputs[2], 99) > mask_rank)
        continue;
      ir::Node nw = make_node(w->name + "/key_mask", "Where", {m, w->inputs[1], w->inputs[2]}, mask + "/key_mask");
      narrowed[mask] = nw.outputs[0];
      f.inputs[3] = nw.outputs[0];
      added.push_back(std::move(nw));
      ++changed;
    }
  }
  if (changed == 0) return 0;
  for (ir::Node& n : added) graph.nodes.push_back(std::move(n));
  graph.topo_sort();
  KILNRT_LOG(kDebug, "attention masks read as key masks: " << changed << " attention node(s), " << narrowed.size()
                                                           << " mask(s)");
  return changed;
}

}  // namespace kilnrt::passes
