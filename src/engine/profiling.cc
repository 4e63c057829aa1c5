#include "engine/profiling.h"

#include <map>
#include <string>

namespace kilnrt::engine {

std::vector<LayerTiming> finish_layer_timings(const Engine& engine, std::vector<LayerTiming> timings) {
  std::map<std::string, std::string> tactic;
  for (const LayerInfo& l : engine.layers()) tactic[l.name] = l.placement + ":" + l.tactic;
  std::vector<LayerTiming> out;
  out.reserve(timings.size());
  for (LayerTiming& t : timings) {
    if (t.calls == 0) continue;
    auto it = tactic.find(t.name);
    if (t.tactic.empty() && it != tactic.end()) t.tactic = it->second;
    t.mean_ms = t.total_ms / static_cast<double>(t.calls);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace kilnrt::engine
