#include "passes/pattern_util.h"

#include <cmath>
#include <unordered_set>
#include <utility>

#include "core/logging.h"
#include "kilnrt/dtype.h"
#include "passes/value_uses.h"

namespace kilnrt::passes {

GraphIndex::GraphIndex(const ir::Graph& g) : g_(g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer_[o] = i;
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      readers_[in].push_back(i);
      ++uses_[in];
    }
    for (const std::string& v : ir::outer_scope_reads(n)) {
      readers_[v].push_back(i);
      ++uses_[v];
    }
  }
  for (const std::string& o : g.outputs) ++uses_[o];
}

const ir::Node* GraphIndex::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &g_.nodes[it->second];
}

int GraphIndex::uses(const std::string& value) const {
  auto it = uses_.find(value);
  return it == uses_.end() ? 0 : it->second;
}

const ir::Node* GraphIndex::sole_consumer(const std::string& value) const {
  if (uses(value) != 1) return nullptr;
  auto it = readers_.find(value);
  return it == readers_.end() || it->second.size() != 1 ? nullptr : &g_.nodes[it->second[0]];
}

bool is_op(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }

const ir::SymShape* shape_of(const ir::Graph& g, const std::string& value) {
  const ir::TensorType* t = g.type_of(value);
  return t && t->has_shape ? &t->shape : nullptr;
}

std::optional<std::vector<int64_t>> int_constant(const ir::Graph& g, const std::string& value) {
  auto it = g.constants.find(value);
  if (it == g.constants.end()) return std::nullopt;
  const Tensor& t = it->second;
  std::vector<int64_t> out;
  if (t.dtype() == DType::kInt64)
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.data<int64_t>()[i]);
  else if (t.dtype() == DType::kInt32)
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.data<int32_t>()[i]);
  else
    return std::nullopt;
  return out;
}

ir::Node make_node(const std::string& name, const char* op, std::vector<std::string> inputs,
                   const std::string& output) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

std::optional<double> scalar_constant(const ir::Graph& g, const std::string& value) {
  auto it = g.constants.find(value);
  if (it == g.constants.end() || it->second.numel() != 1) return std::nullopt;
  const Tensor& t = it->second;
  switch (t.dtype()) {
    case DType::kFloat32: return double(t.data<float>()[0]);
    case DType::kFloat64: return t.data<double>()[0];
    case DType::kFloat16: return double(half_to_float(t.data<uint16_t>()[0]));
    case DType::kBFloat16: return double(bfloat16_to_float(t.data<uint16_t>()[0]));
    default: return std::nullopt;
  }
}

bool binary_with_scalar(const ir::Graph& g, const ir::Node& n, double* c, int* other) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (int i = 0; i < 2; ++i) {
    auto v = scalar_constant(g, n.inputs[i]);
    if (v && !g.is_constant(n.inputs[1 - i])) {
      *c = *v;
      *other = 1 - i;
      return true;
    }
  }
  return false;
}

bool near(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b); }

void use_kilnrt_domain(ir::Graph& g) {
  if (!g.opsets.count("com.kilnrt")) g.opsets["com.kilnrt"] = 1;
}

void erase_nodes(ir::Graph& g, const std::vector<std::string>& names) {
  std::unordered_set<std::string> drop(names.begin(), names.end());
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (ir::Node& n : g.nodes)
    if (!drop.count(n.name)) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
}

size_t apply_fusions(ir::Graph& g, const FusionMatcher& match, const char* what) {
  std::vector<FusionMatch> matches;
  {
    const GraphIndex ix(g);
    for (const ir::Node& n : g.nodes) {
      FusionMatch m;
      if (match(g, ix, n, &m)) matches.push_back(std::move(m));
    }
  }
  if (matches.empty()) return 0;
  std::vector<std::string> erase;
  for (const FusionMatch& m : matches) erase.insert(erase.end(), m.erase.begin(), m.erase.end());
  erase_nodes(g, erase);
  for (FusionMatch& m : matches) g.nodes.push_back(std::move(m.fused));
  use_kilnrt_domain(g);
  g.topo_sort();
  KILNRT_LOG(kDebug, "fused " << matches.size() << " " << what);
  return matches.size();
}

std::string add_constant(ir::Graph& g, const std::string& base, Tensor t) {
  const std::string name = unique_value_name(g, base);
  ir::TensorType type;
  type.dtype = t.dtype();
  type.has_shape = true;
  type.shape = ir::shape_to_sym(t.shape());
  g.types[name] = type;
  g.constants[name] = std::move(t);
  return name;
}

}  // namespace kilnrt::passes
