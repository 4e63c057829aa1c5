#include "passes/fuse_conv_epilogue.h"

#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "ops/nn/fused_conv/fused_conv.h"
#include "passes/fusion_control.h"
#include "passes/value_uses.h"

namespace kilnrt::passes {
namespace {

using ops::nn::FusedActivation;

struct Index {
  std::unordered_map<std::string, int> uses;
  std::unordered_map<std::string, std::vector<size_t>> readers;  // value -> reading nodes
};

Index build_index(const ir::Graph& g) {
  Index ix;
  ix.uses = count_value_uses(g);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) ix.readers[in].push_back(i);
  return ix;
}

bool is_op(const ir::Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// Shapes known to be equal: same rank, each dim known and equal or the same named symbol.
bool same_shape(const ir::TensorType* a, const ir::TensorType* b) {
  if (!a || !b || !a->has_shape || !b->has_shape || a->dtype != b->dtype || a->shape.size() != b->shape.size())
    return false;
  for (size_t i = 0; i < a->shape.size(); ++i) {
    const ir::Dim& x = a->shape[i];
    const ir::Dim& y = b->shape[i];
    if (x.known() != y.known()) return false;
    if (x.known() ? x.value != y.value : (x.param.empty() || x.param != y.param)) return false;
  }
  return true;
}

// A scalar float32 constant input of `n` (index i), or `dflt` when the input is omitted; false if not constant.
bool scalar_input(const ir::Graph& g, const ir::Node& n, size_t i, float dflt, float* out) {
  if (i >= n.inputs.size() || n.inputs[i].empty()) {
    *out = dflt;
    return true;
  }
  auto it = g.constants.find(n.inputs[i]);
  if (it == g.constants.end() || it->second.dtype() != DType::kFloat32 || it->second.numel() != 1) return false;
  *out = it->second.data<float>()[0];
  return true;
}

struct Activation {
  FusedActivation act = FusedActivation::kNone;
  std::vector<float> params;
  std::vector<size_t> nodes;  // the nodes it replaces
  std::string output;
};

// The single-input activation node `n` reading `x`, or false.
bool unary_activation(const ir::Graph& g, const ir::Node& n, Activation* a) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return false;
  if (is_op(n, "Relu"))
    a->act = FusedActivation::kRelu;
  else if (is_op(n, "Sigmoid"))
    a->act = FusedActivation::kSigmoid;
  else if (is_op(n, "HardSwish"))
    a->act = FusedActivation::kHardSwish;
  else if (is_op(n, "LeakyRelu")) {
    a->act = FusedActivation::kLeakyRelu;
    a->params = {n.attr_float("alpha", 0.01f)};
  } else if (is_op(n, "HardSigmoid")) {
    a->act = FusedActivation::kHardSigmoid;
    a->params = {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  } else if (is_op(n, "Gelu")) {
    const std::string approx = n.attr_string("approximate", std::string("none"));
    if (approx != "none" && approx != "tanh") return false;
    a->act = approx == "tanh" ? FusedActivation::kGeluTanh : FusedActivation::kGelu;
  } else if (is_op(n, "Clip")) {
    const float inf = std::numeric_limits<float>::infinity();
    float lo = n.attr_float("min", -inf), hi = n.attr_float("max", inf);
    if (!scalar_input(g, n, 1, lo, &lo) || !scalar_input(g, n, 2, hi, &hi)) return false;
    a->act = FusedActivation::kClip;
    a->params = {lo, hi};
  } else {
    return false;
  }
  return true;
}

// The activation applied to `x` (read only by the activation's nodes), or false.
bool find_activation(const ir::Graph& g, const Index& ix, const std::vector<bool>& removed, const std::string& x,
                     Activation* a) {
  auto u = ix.uses.find(x);
  auto r = ix.readers.find(x);
  if (u == ix.uses.end() || r == ix.readers.end()) return false;
  for (size_t i : r->second)
    if (removed[i]) return false;
  if (u->second == 1 && r->second.size() == 1) {
    const ir::Node& n = g.nodes[r->second[0]];
    if (n.inputs[0] != x || !unary_activation(g, n, a)) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] == x) return false;
    a->nodes = {r->second[0]};
    a->output = n.outputs[0];
    return true;
  }
  // x * Sigmoid(x) (SiLU) and x * HardSigmoid(x) with HardSwish's constants.
  if (u->second != 2 || r->second.size() != 2) return false;
  for (int first = 0; first < 2; ++first) {
    const size_t gi = r->second[first], mi = r->second[1 - first];
    const ir::Node& gate = g.nodes[gi];
    const ir::Node& mul = g.nodes[mi];
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    if (gate.inputs.size() != 1 || gate.outputs.size() != 1) continue;
    const std::string& gv = gate.outputs[0];
    if (!((mul.inputs[0] == x && mul.inputs[1] == gv) || (mul.inputs[1] == x && mul.inputs[0] == gv))) continue;
    auto gu = ix.uses.find(gv);
    if (gu == ix.uses.end() || gu->second != 1) continue;
    if (is_op(gate, "Sigmoid")) {
      a->act = FusedActivation::kSilu;
    } else if (is_op(gate, "HardSigmoid") && std::fabs(gate.attr_float("alpha", 0.2f) - 1.f / 6.f) < 1e-6f &&
               gate.attr_float("beta", 0.5f) == 0.5f) {
      a->act = FusedActivation::kHardSwish;
    } else {
      continue;
    }
    a->nodes = {gi, mi};
    a->output = mul.outputs[0];
    return true;
  }
  return false;
}

ir::Attribute string_attr(const std::string& s) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = s;
  return a;
}

}  // namespace

size_t fuse_conv_epilogues(ir::Graph& graph) {
  if (!fusion_enabled("conv-epilogue")) return 0;
  const Index ix = build_index(graph);
  const size_t n_nodes = graph.nodes.size();
  std::vector<bool> removed(n_nodes, false);
  std::vector<std::pair<size_t, ir::Node>> inserted;  // (position, fused node)
  for (size_t ci = 0; ci < n_nodes; ++ci) {
    const ir::Node& conv = graph.nodes[ci];
    if (removed[ci] || !is_op(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const ir::TensorType* yt = graph.type_of(conv.outputs[0]);
    if (!yt || !yt->has_shape || yt->shape.size() < 3) continue;
    std::string cur = conv.outputs[0];
    std::vector<size_t> chain;
    std::string residual;
    // Residual Add of a same-shape tensor.
    auto u = ix.uses.find(cur);
    auto r = ix.readers.find(cur);
    if (u != ix.uses.end() && u->second == 1 && r != ix.readers.end() && r->second.size() == 1 &&
        !removed[r->second[0]]) {
      const ir::Node& add = graph.nodes[r->second[0]];
      if (is_op(add, "Add") && add.inputs.size() == 2 && add.outputs.size() == 1) {
        const std::string& other = add.inputs[0] == cur ? add.inputs[1] : add.inputs[0];
        if (other != cur && same_shape(graph.type_of(other), yt) && same_shape(graph.type_of(add.outputs[0]), yt)) {
          residual = other;
          chain.push_back(r->second[0]);
          cur = add.outputs[0];
        }
      }
    }
    Activation act;
    if (find_activation(graph, ix, removed, cur, &act)) {
      chain.insert(chain.end(), act.nodes.begin(), act.nodes.end());
      cur = act.output;
    }
    if (chain.empty()) continue;
    ir::Node fused;
    fused.name = conv.name;
    fused.op_type = ops::nn::kFusedConvOp;
    fused.domain = ops::nn::kFusedConvDomain;
    fused.inputs = {conv.inputs[0], conv.inputs[1], conv.inputs.size() > 2 ? conv.inputs[2] : std::string(), residual};
    while (fused.inputs.back().empty()) fused.inputs.pop_back();
    fused.outputs = {cur};
    fused.attrs = conv.attrs;
    if (act.act != FusedActivation::kNone) {
      fused.attrs["activation"] = string_attr(ops::nn::fused_activation_name(act.act));
      if (!act.params.empty()) {
        ir::Attribute p;
        p.kind = ir::Attribute::Kind::kFloats;
        p.floats = act.params;
        fused.attrs["activation_params"] = p;
      }
    }
    // Intermediate values disappear; the fused node sits where the chain's last node was (the residual may be
    // produced after the Conv).
    graph.types.erase(conv.outputs[0]);
    size_t last = ci;
    for (size_t k : chain) {
      for (const std::string& o : graph.nodes[k].outputs)
        if (o != cur) graph.types.erase(o);
      removed[k] = true;
      last = std::max(last, k);
    }
    removed[ci] = true;
    inserted.emplace_back(last, std::move(fused));
  }
  if (inserted.empty()) return 0;
  std::vector<ir::Node*> at(n_nodes, nullptr);
  for (auto& [pos, node] : inserted) at[pos] = &node;
  std::vector<ir::Node> out;
  out.reserve(n_nodes);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (at[i])
      out.push_back(std::move(*at[i]));
    else if (!removed[i])
      out.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(out);
  graph.opsets[ops::nn::kFusedConvDomain] = 1;
  return inserted.size();
}

}  // namespace kilnrt::passes
