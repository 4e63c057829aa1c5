#include "passes/fuse_pointwise.h"

#include <cfloat>
#include <cmath>
#include <map>
#include <set>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/fused_pointwise/fused_pointwise.h"
#include "ops/op_registry.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

using namespace ops::nn;

constexpr size_t kMaxInputs = 8;  // the CUDA kernel's argument block (ops/nn/fused_pointwise/cuda)
constexpr size_t kMaxNodes = 64;
constexpr int kMaxRank = 6;

// One node as a program instruction: opcode, parameters and the values it reads (in operand order).
struct Lowered {
  int op = 0;
  float p0 = 0.f, p1 = 0.f;
  std::vector<std::string> operands;
};

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

const ir::TensorType* known_type(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = g.type_of(v);
  return t && t->has_shape && static_cast<int>(t->shape.size()) <= kMaxRank ? t : nullptr;
}

bool float_value(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = known_type(g, v);
  return t && is_float(t->dtype);
}

// Clip's bound: absent -> dflt; else a single-element float constant.
bool clip_bound(const ir::Graph& g, const ir::Node& n, size_t i, float dflt, float* out) {
  if (n.inputs.size() <= i || n.inputs[i].empty()) {
    *out = dflt;
    return true;
  }
  const auto c = scalar_constant(g, n.inputs[i]);
  if (!c) return false;
  *out = static_cast<float>(*c);
  return true;
}

// Whether `n` is a pointwise node this pass can fuse, and how.
bool lower(const ir::Graph& g, const ir::Node& n, Lowered* l) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !float_value(g, n.outputs[0])) return false;
  if (!ir::outer_scope_reads(n).empty()) return false;
  const std::string& op = n.op_type;
  const bool kilnrt = n.domain == kKilnrtDomain;
  if (!n.domain.empty() && !kilnrt) return false;
  if (kilnrt && op != "Gelu") return false;
  static const std::map<std::string, int> unary = {{"Neg", kPwNeg},
                                                   {"Abs", kPwAbs},
                                                   {"Exp", kPwExp},
                                                   {"Log", kPwLog},
                                                   {"Sqrt", kPwSqrt},
                                                   {"Reciprocal", kPwReciprocal},
                                                   {"Sigmoid", kPwSigmoid},
                                                   {"Tanh", kPwTanh},
                                                   {"Erf", kPwErf},
                                                   {"Relu", kPwRelu},
                                                   {"Floor", kPwFloor},
                                                   {"Ceil", kPwCeil},
                                                   {"Sin", kPwSin},
                                                   {"Cos", kPwCos},
                                                   {"Softplus", kPwSoftplus},
                                                   {"Softsign", kPwSoftsign},
                                                   {"HardSwish", kPwHardSwish},
                                                   {"Identity", kPwIdentity},
                                                   {"Mish", kPwMish}};
  static const std::map<std::string, int> binary = {{"Add", kPwAdd}, {"Sub", kPwSub},    {"Mul", kPwMul},
                                                    {"Div", kPwDiv}, {"Max", kPwMax},    {"Min", kPwMin},
                                                    {"Sum", kPwAdd}, {"PRelu", kPwPRelu}};
  for (const std::string& in : n.inputs)
    if (in.empty() && op != "Clip") return false;
  if (auto it = unary.find(op); it != unary.end() && !kilnrt) {
    if (n.inputs.size() != 1 || !float_value(g, n.inputs[0])) return false;
    l->op = it->second;
    l->operands = {n.inputs[0]};
    return true;
  }
  if (auto it = binary.find(op); it != binary.end()) {
    if (n.inputs.size() != 2 || !float_value(g, n.inputs[0]) || !float_value(g, n.inputs[1])) return false;
    l->op = it->second;
    l->operands = {n.inputs[0], n.inputs[1]};
    return true;
  }
  if (n.inputs.empty() || !float_value(g, n.inputs[0])) return false;
  l->operands = {n.inputs[0]};
  if (op == "Pow") {
    if (n.inputs.size() != 2 || !float_value(g, n.inputs[1])) return false;
    if (const auto e = scalar_constant(g, n.inputs[1])) {
      l->op = kPwPowScalar;
      l->p0 = static_cast<float>(*e);
    } else {
      l->op = kPwPow;
      l->operands.push_back(n.inputs[1]);
    }
    return true;
  }
  if (n.inputs.size() != 1 && op != "Clip") return false;
  if (op == "LeakyRelu") {
    l->op = kPwLeakyRelu;
    l->p0 = n.attr_float("alpha", 0.01f);
    return true;
  }
  if (op == "Elu") {
    l->op = kPwElu;
    l->p0 = n.attr_float("alpha", 1.f);
    return true;
  }
  if (op == "Celu") {
    l->op = kPwCelu;
    l->p0 = n.attr_float("alpha", 1.f);
    return true;
  }
  if (op == "ThresholdedRelu") {
    l->op = kPwThresholdedRelu;
    l->p0 = n.attr_float("alpha", 1.f);
    return true;
  }
  if (op == "HardSigmoid") {
    l->op = kPwHardSigmoid;
    l->p0 = n.attr_float("alpha", 0.2f);
    l->p1 = n.attr_float("beta", 0.5f);
    return true;
  }
  if (op == "Selu") {
    l->op = kPwSelu;
    l->p0 = n.attr_float("alpha", 1.67326319217681884765625f);
    l->p1 = n.attr_float("gamma", 1.05070102214813232421875f);
    return true;
  }
  if (op == "Gelu") {
    const std::string a = n.attr_string("approximate", std::string("none"));
    if (a != "none" && a != "tanh") return false;
    l->op = kPwGelu;
    l->p0 = a == "tanh" ? 1.f : 0.f;
    return true;
  }
  if (op == "Clip") {
    l->op = kPwClip;
    if (g.opset("") < 11) {
      l->p0 = n.attr_float("min", -FLT_MAX);
      l->p1 = n.attr_float("max", FLT_MAX);
      return n.inputs.size() == 1;
    }
    return n.inputs.size() <= 3 && clip_bound(g, n, 1, -INFINITY, &l->p0) && clip_bound(g, n, 2, INFINITY, &l->p1);
  }
  if (op == "Cast") {
    const int64_t to = n.attr_int("to", 0);
    l->op = kPwCast;
    if (to == 1)
      l->p0 = 0.f;
    else if (to == 10)
      l->p0 = 1.f;
    else if (to == 16)
      l->p0 = 2.f;
    else
      return false;
    return true;
  }
  if (op == "Where") return false;  // handled below (3 inputs)
  return false;
}

bool lower_any(const ir::Graph& g, const ir::Node& n, Lowered* l) {
  if (n.domain.empty() && n.op_type == "Where") {
    if (n.inputs.size() != 3 || n.outputs.size() != 1 || !float_value(g, n.outputs[0])) return false;
    const ir::TensorType* c = known_type(g, n.inputs[0]);
    if (!c || c->dtype != DType::kBool || !float_value(g, n.inputs[1]) || !float_value(g, n.inputs[2])) return false;
    l->op = kPwWhere;
    l->operands = n.inputs;
    return true;
  }
  return lower(g, n, l);
}

// A single-element float constant that becomes an immediate (a Const instruction).
bool immediate(const ir::Graph& g, const std::string& v, float* value) {
  const auto c = scalar_constant(g, v);
  if (!c) return false;
  *value = static_cast<float>(*c);
  return true;
}

struct Group {
  std::vector<size_t> nodes;  // indices into graph.nodes, in graph (topological) order
  size_t sink = 0;
};

}  // namespace

size_t fuse_pointwise(ir::Graph& graph) {
  if (!fusion_enabled("pointwise")) return 0;
  std::vector<Lowered> lowered(graph.nodes.size());
  std::vector<char> fusable(graph.nodes.size(), 0);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    fusable[i] = lower_any(graph, graph.nodes[i], &lowered[i]) ? 1 : 0;
    for (const std::string& o : graph.nodes[i].outputs) producer[o] = i;
  }
  std::vector<ir::Node> fused;
  std::vector<std::string> erase;
  std::vector<char> taken(graph.nodes.size(), 0);
  const GraphIndex ix(graph);
  for (size_t s = graph.nodes.size(); s-- > 0;) {  // sinks first: reverse topological order
    if (!fusable[s] || taken[s]) continue;
    std::set<size_t> members = {s};
    for (bool grew = true; grew && members.size() < kMaxNodes;) {
      grew = false;
      std::map<std::string, int> reads;  // reads of each value by the group's nodes
      for (size_t m : members)
        for (const std::string& v : lowered[m].operands) ++reads[v];
      for (const auto& [v, count] : reads) {
        auto it = producer.find(v);
        if (it == producer.end() || members.count(it->second) || !fusable[it->second] || taken[it->second]) continue;
        if (ix.uses(v) != count) continue;  // read elsewhere too (or a graph output): stays materialised
        members.insert(it->second);
        grew = true;
        if (members.size() >= kMaxNodes) break;
      }
    }
    if (members.size() < 2) continue;
    // Registers: external inputs first (order of first read), then one per instruction.
    ops::nn::PwProgram prog;
    std::map<std::string, int> reg;
    std::vector<std::string> inputs;
    std::vector<std::pair<float, std::string>> imms;
    for (size_t m : members)
      for (const std::string& v : lowered[m].operands) {
        auto it = producer.find(v);
        float c = 0.f;
        if ((it != producer.end() && members.count(it->second)) || reg.count(v)) continue;
        if (immediate(graph, v, &c)) continue;
        reg[v] = static_cast<int>(inputs.size());
        inputs.push_back(v);
      }
    if (inputs.empty() || inputs.size() > kMaxInputs) continue;
    prog.num_inputs = static_cast<int>(inputs.size());
    int next = prog.num_inputs;
    for (size_t m : members) {  // std::set: ascending index = topological order
      const Lowered& l = lowered[m];
      ops::nn::PwInstr in;
      int* slots[3] = {&in.a, &in.b, &in.c};
      for (size_t j = 0; j < l.operands.size(); ++j) {
        const std::string& v = l.operands[j];
        if (!reg.count(v)) {  // an immediate
          ops::nn::PwInstr k;
          k.op = kPwConst;
          immediate(graph, v, &k.p0);
          prog.code.push_back(k);
          reg[v] = next++;
        }
        *slots[j] = reg[v];
      }
      in.op = l.op;
      in.p0 = l.p0;
      in.p1 = l.p1;
      prog.code.push_back(in);
      reg[graph.nodes[m].outputs[0]] = next++;
    }
    // The external inputs must broadcast to the sink's shape (an inlined constant may have carried rank).
    const ir::Node& sink = graph.nodes[s];
    const ir::TensorType* out_t = graph.type_of(sink.outputs[0]);
    ir::SymShape shape;
    bool same = true;
    try {
      for (const std::string& v : inputs) shape = ops::broadcast_sym_shapes(shape, graph.type_of(v)->shape, sink);
    } catch (const Error&) {
      same = false;
    }
    same = same && shape.size() == out_t->shape.size();
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = !(shape[d].known() && out_t->shape[d].known()) || shape[d].value == out_t->shape[d].value;
    if (!same) continue;
    ir::Node n;
    n.name = sink.name + "/fused_pointwise";
    n.op_type = kFusedPointwiseOp;
    n.domain = kKilnrtDomain;
    n.inputs = inputs;
    n.outputs = {sink.outputs[0]};
    ops::nn::write_pointwise_program(prog, &n);
    fused.push_back(std::move(n));
    for (size_t m : members) {
      taken[m] = 1;
      erase.push_back(graph.nodes[m].name);
    }
  }
  if (fused.empty()) return 0;
  erase_nodes(graph, erase);
  for (ir::Node& n : fused) graph.nodes.push_back(std::move(n));
  use_kilnrt_domain(graph);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "fused " << fused.size() << " pointwise group(s) of " << erase.size() << " nodes");
  return fused.size();
}

}  // namespace kilnrt::passes
