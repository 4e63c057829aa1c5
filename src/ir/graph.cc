#include "ir/graph.h"

#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/check.h"

namespace kilnrt::ir {

std::string sym_shape_to_string(const SymShape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += "x";
    out += s[i].known() ? std::to_string(s[i].value) : (s[i].param.empty() ? "?" : s[i].param);
  }
  return out;
}

bool sym_shape_known(const SymShape& s) {
  for (const Dim& d : s)
    if (!d.known()) return false;
  return true;
}

Shape sym_shape_to_shape(const SymShape& s) {
  Shape out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.known() ? d.value : -1);
  return out;
}

SymShape shape_to_sym(const Shape& s) {
  SymShape out;
  out.reserve(s.size());
  for (int64_t d : s) out.push_back(d >= 0 ? Dim(d) : Dim());
  return out;
}

// ---- Node attribute getters ----------------------------------------------------------------------------------

namespace {
const Attribute* find_attr(const Node& n, const std::string& k, Attribute::Kind kind, bool required) {
  auto it = n.attrs.find(k);
  if (it == n.attrs.end()) {
    KILNRT_CHECK(!required, kInvalidModel, n.describe(), "required attribute '" << k << "' is missing");
    return nullptr;
  }
  KILNRT_CHECK(it->second.kind == kind, kInvalidModel, n.describe(), "attribute '" << k << "' has the wrong type");
  return &it->second;
}
}  // namespace

int64_t Node::attr_int(const std::string& k, std::optional<int64_t> dflt) const {
  const Attribute* a = find_attr(*this, k, Attribute::Kind::kInt, !dflt.has_value());
  return a ? a->i : *dflt;
}
float Node::attr_float(const std::string& k, std::optional<float> dflt) const {
  const Attribute* a = find_attr(*this, k, Attribute::Kind::kFloat, !dflt.has_value());
  return a ? a->f : *dflt;
}
std::string Node::attr_string(const std::string& k, std::optional<std::string> dflt) const {
  const Attribute* a = find_attr(*this, k, Attribute::Kind::kString, !dflt.has_value());
  return a ? a->s : *dflt;
}
std::vector<int64_t> Node::attr_ints(const std::string& k, std::optional<std::vector<int64_t>> dflt) const {
  auto it = attrs.find(k);
  // An empty repeated attribute may be typed as either list kind by exporters.
  if (it != attrs.end() && it->second.kind == Attribute::Kind::kFloats && it->second.floats.empty()) return {};
  const Attribute* a = find_attr(*this, k, Attribute::Kind::kInts, !dflt.has_value());
  return a ? a->ints : *dflt;
}
std::vector<float> Node::attr_floats(const std::string& k, std::optional<std::vector<float>> dflt) const {
  auto it = attrs.find(k);
  if (it != attrs.end() && it->second.kind == Attribute::Kind::kInts && it->second.ints.empty()) return {};
  const Attribute* a = find_attr(*this, k, Attribute::Kind::kFloats, !dflt.has_value());
  return a ? a->floats : *dflt;
}
const Tensor& Node::attr_tensor(const std::string& k) const {
  return find_attr(*this, k, Attribute::Kind::kTensor, true)->t;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return d + " '" + name + "'";
}

// ---- Subgraph outer-scope reads --------------------------------------------------------------------------------

namespace {
void collect_outer_reads(const Graph& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& kv : g.constants) defined.insert(kv.first);
  for (const Node& n : g.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) use(in);
    for (const std::string& v : outer_scope_reads(n)) use(v);
  }
  for (const std::string& o : g.outputs) use(o);
}
}  // namespace

std::vector<std::string> outer_scope_reads(const Node& node) {
  std::set<std::string> out;
  for (const auto& kv : node.attrs)
    if (kv.second.kind == Attribute::Kind::kGraph && kv.second.g) collect_outer_reads(*kv.second.g, out);
  return {out.begin(), out.end()};
}

// ---- Graph ---------------------------------------------------------------------------------------------------

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain);
  return it == opsets.end() ? 0 : it->second;
}

const TensorType* Graph::type_of(const std::string& value) const {
  auto it = types.find(value);
  return it == types.end() ? nullptr : &it->second;
}

void Graph::topo_sort() {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs) {
      if (o.empty()) continue;
      KILNRT_CHECK(producer.emplace(o, i).second, kInvalidModel, nodes[i].describe(),
                   "value '" << o << "' is produced by more than one node");
      KILNRT_CHECK(!constants.count(o), kInvalidModel, nodes[i].describe(),
                   "value '" << o << "' is both an initializer and a node output");
    }
  }
  std::unordered_set<std::string> available(inputs.begin(), inputs.end());
  for (const auto& kv : constants) available.insert(kv.first);
  // Each node's dependencies: its inputs, then what its subgraphs read from the enclosing graph.
  std::vector<std::vector<std::string>> deps(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    deps[i] = nodes[i].inputs;
    for (const std::string& v : outer_scope_reads(nodes[i])) deps[i].push_back(v);
  }
  // Iterative DFS: state 0 = new, 1 = in progress, 2 = done.
  std::vector<int> state(nodes.size(), 0);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, next_input] = stack.back();
      const Node& node = nodes[n];
      if (next_input < deps[n].size()) {
        const std::string& in = deps[n][next_input++];
        if (in.empty() || available.count(in)) continue;
        auto p = producer.find(in);
        KILNRT_CHECK(p != producer.end(), kInvalidModel, node.describe(),
                     "input '" << in << "' is not a graph input, initializer or output of any node");
        if (state[p->second] == 1)
          KILNRT_THROW(kInvalidModel, node.describe(), "the graph has a cycle through value '" << in << "'");
        if (state[p->second] == 0) {
          state[p->second] = 1;
          stack.emplace_back(p->second, 0);
        }
        continue;
      }
      state[n] = 2;
      order.push_back(n);
      stack.pop_back();
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
  for (const std::string& o : outputs) {
    KILNRT_CHECK(available.count(o) || producer.count(o), kInvalidModel, o,
                 "graph output '" << o << "' is not produced by any node");
  }
}

void Graph::prune_unused() {
  std::unordered_set<std::string> used(outputs.begin(), outputs.end());
  used.insert(inputs.begin(), inputs.end());
  for (const Node& n : nodes) {
    used.insert(n.inputs.begin(), n.inputs.end());
    used.insert(n.outputs.begin(), n.outputs.end());
    for (const std::string& v : outer_scope_reads(n)) used.insert(v);
  }
  for (auto it = constants.begin(); it != constants.end();)
    it = used.count(it->first) ? std::next(it) : constants.erase(it);
  for (auto it = types.begin(); it != types.end();) it = used.count(it->first) ? std::next(it) : types.erase(it);
}

std::string Graph::to_string(bool with_types) const {
  std::ostringstream os;
  auto value_str = [&](const std::string& v) {
    if (v.empty()) return std::string("<none>");
    std::string s = v;
    if (with_types) {
      if (const TensorType* t = type_of(v)) {
        s += ":" + std::string(dtype_name(t->dtype));
        s += t->has_shape ? "[" + sym_shape_to_string(t->shape) + "]" : "[?]";
        if (t->is_sequence) s += " sequence";  // a sequence of such tensors
      }
    }
    return s;
  };
  os << "graph '" << name << "' (" << nodes.size() << " nodes, " << constants.size() << " constants)\n";
  for (const std::string& i : inputs) os << "  input  " << value_str(i) << "\n";
  for (const Node& n : nodes) {
    os << "  " << n.describe() << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << value_str(n.inputs[i]);
    os << ") -> ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << value_str(n.outputs[i]);
    os << "\n";
  }
  for (const std::string& o : outputs) os << "  output " << value_str(o) << "\n";
  return os.str();
}

}  // namespace kilnrt::ir
