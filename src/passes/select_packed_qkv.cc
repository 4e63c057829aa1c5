#include "passes/select_packed_qkv.h"

#include <algorithm>
#include <optional>

#include "core/logging.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

// Normalised axes of Squeeze / Unsqueeze (input 1, opset >= 13) for a tensor of rank r; nullopt when not constant
// or out of range.
std::optional<std::vector<int64_t>> axes_of(const ir::Graph& g, const ir::Node& n, int64_t r) {
  if (n.inputs.size() < 2 || n.inputs[1].empty()) return std::nullopt;
  auto axes = int_constant(g, n.inputs[1]);
  if (!axes) return std::nullopt;
  for (int64_t& a : *axes) {
    if (a < 0) a += r;
    if (a < 0 || a >= r) return std::nullopt;
  }
  std::sort(axes->begin(), axes->end());
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) return std::nullopt;
  return axes;
}

// The chain's end `x` traced back through Squeeze / Unsqueeze / Transpose to `base`: map[i] is the base axis of x's
// axis i, or -1 for an axis that an Unsqueeze inserted. Returns false when no Transpose was crossed (nothing to gain)
// or a step is not understood.
bool trace_view(const ir::Graph& g, const GraphIndex& ix, const std::string& x, std::string* base,
                std::vector<int64_t>* map) {
  const ir::SymShape* xs = shape_of(g, x);
  if (!xs) return false;
  map->clear();
  for (size_t i = 0; i < xs->size(); ++i) map->push_back(static_cast<int64_t>(i));
  std::string cur = x;
  bool transposed = false;
  for (;;) {
    const ir::Node* p = ix.producer(cur);
    if (!p || !p->domain.empty() || p->outputs.size() != 1 || p->inputs.empty()) break;
    const ir::SymShape* in = shape_of(g, p->inputs[0]);
    const ir::SymShape* out = shape_of(g, cur);
    if (!in || !out) break;
    const int64_t ri = static_cast<int64_t>(in->size()), ro = static_cast<int64_t>(out->size());
    std::vector<int64_t> to_in(ro, -1);  // output axis -> input axis (-1: inserted)
    if (p->op_type == "Transpose") {
      std::vector<int64_t> perm = p->attr_ints("perm", std::vector<int64_t>{});
      if (perm.empty())
        for (int64_t i = ri - 1; i >= 0; --i) perm.push_back(i);
      if (static_cast<int64_t>(perm.size()) != ro || ri != ro) return false;
      to_in = perm;
      transposed = true;
    } else if (p->op_type == "Squeeze") {
      auto axes = axes_of(g, *p, ri);
      if (!axes || ri - static_cast<int64_t>(axes->size()) != ro) return false;
      int64_t j = 0;
      for (int64_t i = 0; i < ri; ++i)
        if (!std::binary_search(axes->begin(), axes->end(), i)) to_in[j++] = i;
    } else if (p->op_type == "Unsqueeze") {
      auto axes = axes_of(g, *p, ro);
      if (!axes || ri + static_cast<int64_t>(axes->size()) != ro) return false;
      int64_t j = 0;
      for (int64_t i = 0; i < ro; ++i)
        if (!std::binary_search(axes->begin(), axes->end(), i)) to_in[i] = j++;
    } else {
      break;
    }
    for (int64_t& m : *map)
      if (m >= 0) m = to_in[m];
    cur = p->inputs[0];
  }
  *base = cur;
  return transposed && cur != x;
}

struct Rewrite {
  std::string gather;              // node name
  std::string base, out;           // Slice input, Reshape output (the Gather's output)
  int64_t axis = 0, index = 0;     // on the base
  std::vector<int64_t> out_shape;  // Reshape target (0 = copy, -1 = infer)
};

}  // namespace

size_t select_packed_qkv(ir::Graph& graph) {
  if (graph.opset("") < 13) return 0;
  std::vector<Rewrite> rewrites;
  {
    const GraphIndex ix(graph);
    std::vector<std::string> ends;  // chain ends whose readers were all examined
    for (const ir::Node& n : graph.nodes) {
      if (!is_op(&n, "Gather") || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
      const std::string& x = n.inputs[0];
      if (std::find(ends.begin(), ends.end(), x) != ends.end()) continue;
      ends.push_back(x);
      std::string base;
      std::vector<int64_t> map;
      if (!trace_view(graph, ix, x, &base, &map)) continue;
      const ir::SymShape* bs = shape_of(graph, base);
      if (!bs) continue;
      // Every reader of x: a Gather on a constant scalar index along an axis that maps to the base, the other
      // axes in the base's order.
      std::vector<Rewrite> mine;
      size_t readers = 0;
      bool ok = true;
      for (const ir::Node& r : graph.nodes) {
        if (std::find(r.inputs.begin(), r.inputs.end(), x) == r.inputs.end()) continue;
        ++readers;
        if (!is_op(&r, "Gather") || r.inputs.size() != 2 || r.inputs[0] != x || r.outputs.size() != 1) {
          ok = false;
          break;
        }
        const auto idx = int_constant(graph, r.inputs[1]);
        if (!idx || idx->size() != 1 || graph.constants.at(r.inputs[1]).rank() != 0) {  // a scalar index only
          ok = false;
          break;
        }
        int64_t ax = r.attr_int("axis", 0);
        if (ax < 0) ax += static_cast<int64_t>(map.size());
        if (ax < 0 || ax >= static_cast<int64_t>(map.size()) || map[ax] < 0) {
          ok = false;
          break;
        }
        const int64_t b_ax = map[ax];
        int64_t last = -1;
        for (size_t i = 0; i < map.size() && ok; ++i) {
          if (static_cast<int64_t>(i) == ax || map[i] < 0) continue;
          ok = map[i] > last;
          last = map[i];
        }
        const ir::Dim& d = (*bs)[b_ax];
        int64_t c = (*idx)[0];
        if (!ok || !d.known()) {
          ok = false;
          break;
        }
        if (c < 0) c += d.value;
        if (c < 0 || c >= d.value) {
          ok = false;
          break;
        }
        // Reshape target: the Gather's output shape; 0 where the sliced base has the same dim at that position.
        const ir::SymShape* os = shape_of(graph, r.outputs[0]);
        if (!os) {
          ok = false;
          break;
        }
        Rewrite w{r.name, base, r.outputs[0], b_ax, c, {}};
        bool inferred = false;
        for (size_t i = 0; i < os->size() && ok; ++i) {
          const ir::Dim& o = (*os)[i];
          const bool same =
              i < bs->size() && static_cast<int64_t>(i) != b_ax && (o.known() || !o.param.empty()) && o == (*bs)[i];
          if (same)
            w.out_shape.push_back(0);
          else if (o.known())
            w.out_shape.push_back(o.value);
          else if (!inferred)
            w.out_shape.push_back(-1), inferred = true;
          else
            ok = false;
        }
        if (ok) mine.push_back(std::move(w));
      }
      if (!ok || readers == 0 || std::find(graph.outputs.begin(), graph.outputs.end(), x) != graph.outputs.end())
        continue;
      for (Rewrite& w : mine) rewrites.push_back(std::move(w));
    }
  }
  if (rewrites.empty()) return 0;
  std::vector<std::string> erase;
  for (const Rewrite& w : rewrites) {
    erase.push_back(w.gather);
    const std::string p = w.out + "/select";
    auto vec = [](std::vector<int64_t> v) {
      const int64_t n = static_cast<int64_t>(v.size());
      return Tensor::from_vector(v, DType::kInt64, {n});
    };
    graph.constants[p + "_starts"] = vec({w.index});
    graph.constants[p + "_ends"] = vec({w.index + 1});
    graph.constants[p + "_axes"] = vec({w.axis});
    graph.constants[p + "_shape"] = vec(w.out_shape);
    ir::Node s;
    s.name = p + "_slice";
    s.op_type = "Slice";
    s.inputs = {w.base, p + "_starts", p + "_ends", p + "_axes"};
    s.outputs = {p};
    ir::Node r;
    r.name = p + "_reshape";
    r.op_type = "Reshape";
    r.inputs = {p, p + "_shape"};
    r.outputs = {w.out};
    graph.nodes.push_back(std::move(s));
    graph.nodes.push_back(std::move(r));
  }
  erase_nodes(graph, erase);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "rewrote " << rewrites.size() << " packed-projection select(s) as slices");
  return rewrites.size();
}

}  // namespace kilnrt::passes
