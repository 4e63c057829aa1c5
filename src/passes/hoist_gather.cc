#include "passes/hoist_gather.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"
#include "passes/shape_inference.h"
#include "passes/value_uses.h"

namespace kilnrt::passes {
namespace {

// What a Gather picks: rows (normalised to [0, n), fewer than n) along `axis` of data of known rank and axis size.
struct Pick {
  int64_t axis = 0;
  std::vector<int64_t> rows;
  bool scalar = false;  // a scalar index: the output drops the axis
};

bool read_pick(const ir::Graph& g, const ir::Node& n, Pick* p) {
  if (!is_op(&n, "Gather") || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const ir::SymShape* xs = shape_of(g, n.inputs[0]);
  auto rows = int_constant(g, n.inputs[1]);
  if (!xs || !rows || rows->empty() || g.constants.at(n.inputs[1]).rank() > 1) return false;
  const int64_t rank = static_cast<int64_t>(xs->size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  const ir::Dim& d = (*xs)[axis];
  if (!d.known() || static_cast<int64_t>(rows->size()) >= d.value) return false;
  for (int64_t& r : *rows) {
    if (r < 0) r += d.value;
    if (r < 0 || r >= d.value) return false;
  }
  p->axis = axis;
  p->rows = std::move(*rows);
  p->scalar = g.constants.at(n.inputs[1]).rank() == 0;
  return true;
}

// Ops that compute each output element from the same element of their (broadcast) inputs.
const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {
      "Abs",         "Add",        "And",      "Cast",      "Ceil",  "Clip",        "Cos",     "Div",
      "Elu",         "Equal",      "Erf",      "Exp",       "Floor", "Gelu",        "Greater", "GreaterOrEqual",
      "HardSigmoid", "HardSwish",  "Identity", "LeakyRelu", "Less",  "LessOrEqual", "Log",     "Max",
      "Min",         "Mish",       "Mod",      "Mul",       "Neg",   "Not",         "Or",      "Pow",
      "PRelu",       "Reciprocal", "Relu",     "Round",     "Selu",  "Sigmoid",     "Sign",    "Sin",
      "Softplus",    "Softsign",   "Sqrt",     "Sub",       "Tanh",  "Where",       "Xor"};
  return ops;
}

// The reduced axes of a keepdims Reduce* node (attribute, or constant second input), normalised; empty when unknown.
std::vector<int64_t> reduced_axes(const ir::Graph& g, const ir::Node& p, int64_t rank) {
  std::vector<int64_t> axes;
  if (p.has_attr("axes"))
    axes = p.attr_ints("axes");
  else if (p.inputs.size() > 1 && !p.inputs[1].empty())
    axes = int_constant(g, p.inputs[1]).value_or(std::vector<int64_t>{});
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  return axes;
}

// For a com.kilnrt:FusedAttention whose output axis `axis` is the query axis: the query input's physical axis for it
// (the keys, values and a mask that broadcasts along the queries are read whole).
bool query_rows(const ir::Graph& g, const ir::Node& p, int64_t axis, std::vector<int64_t>* along) {
  if (p.inputs.size() < 3 || p.outputs.size() != 1) return false;
  const ir::SymShape* q = shape_of(g, p.inputs[0]);
  const ir::SymShape* y = shape_of(g, p.outputs[0]);
  if (!q || !y || q->size() != y->size() || q->size() < 2) return false;
  const size_t r = q->size();
  const std::vector<int64_t> q_perm = ops::nn::attention_perm(p, "q_perm", r);
  const std::vector<int64_t> out_perm = ops::nn::attention_perm(p, "out_perm", r);
  if (out_perm[static_cast<size_t>(axis)] != static_cast<int64_t>(r) - 2) return false;  // not the query axis
  const int64_t q_axis = q_perm[r - 2];
  const std::vector<int64_t> part = ops::nn::attention_part(p, "q_part", r);
  if (!part.empty() && part[0] == q_axis) return false;
  if (p.inputs.size() > 3 && !p.inputs[3].empty()) {  // the mask's query dim: broadcast, or no mask
    const ir::SymShape* m = shape_of(g, p.inputs[3]);
    if (!m || (m->size() >= 2 && !((*m)[m->size() - 2].known() && (*m)[m->size() - 2].value == 1))) return false;
  }
  (*along)[0] = q_axis;
  return true;
}

// Whether `p` computes its output (rank `rank`) row by row along `axis`, whose size is `rows`. On true, `along[i]` is
// the axis along which input i must be gathered, or -1 when the input is read whole (it lacks the axis, or broadcasts
// along it).
bool row_wise(const ir::Graph& g, const GraphIndex& ix, const ir::Node& p, int64_t rank, int64_t axis,
              const ir::Dim& rows, std::vector<int64_t>* along) {
  if (p.outputs.empty()) return false;
  for (size_t i = 1; i < p.outputs.size(); ++i)
    if (!p.outputs[i].empty() && ix.uses(p.outputs[i]) > 0) return false;
  along->assign(p.inputs.size(), -1);
  if (p.domain == ops::nn::kKilnrtDomain && p.op_type == "FusedAttention") return query_rows(g, p, axis, along);
  if (!p.domain.empty()) return false;
  const std::string& op = p.op_type;
  if (elementwise_ops().count(op)) {
    if (p.outputs.size() != 1) return false;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.inputs[i].empty()) continue;
      const ir::SymShape* s = shape_of(g, p.inputs[i]);
      if (!s || static_cast<int64_t>(s->size()) > rank) return false;
      const int64_t a = axis - (rank - static_cast<int64_t>(s->size()));
      if (a < 0 || ((*s)[a].known() && (*s)[a].value == 1)) continue;
      if ((*s)[a] != rows) return false;
      (*along)[i] = a;
    }
    return true;
  }
  const ir::SymShape* x = p.inputs.empty() || p.inputs[0].empty() ? nullptr : shape_of(g, p.inputs[0]);
  if (!x || (op != "Reshape" && static_cast<int64_t>(x->size()) != rank)) return false;
  if (op == "Reshape") {  // dims up to the axis kept, the ones after it merged or split
    const ir::SymShape* y = shape_of(g, p.outputs[0]);
    if (p.inputs.size() != 2 || !int_constant(g, p.inputs[1]) || p.attr_int("allowzero", 0) != 0 || !y ||
        static_cast<int64_t>(y->size()) <= axis || static_cast<int64_t>(x->size()) <= axis)
      return false;
    for (int64_t d = 0; d <= axis; ++d)
      if ((*x)[d] != (*y)[d] || !((*x)[d].known() || !(*x)[d].param.empty())) return false;
  } else if (op == "MatMul") {  // rows of A times a matrix
    const ir::SymShape* b = p.inputs.size() == 2 ? shape_of(g, p.inputs[1]) : nullptr;
    if (!b || b->size() != 2 || rank < 2 || axis >= rank - 1) return false;
  } else if (op == "LayerNormalization") {
    int64_t first = p.attr_int("axis", -1);
    if (first < 0) first += rank;
    if (axis >= first) return false;
  } else if (op == "Softmax" || op == "LogSoftmax") {
    if (g.opset() < 13) return false;  // before 13: the input is read as a 2-D matrix from `axis` on
    int64_t a = p.attr_int("axis", -1);
    if (a < 0) a += rank;
    if (a == axis) return false;
  } else if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceL2" ||
             op == "ReduceSumSquare") {
    if (p.attr_int("keepdims", 1) != 1) return false;
    const std::vector<int64_t> axes = reduced_axes(g, p, rank);
    if (axes.empty()) return false;  // all axes, or not known
    for (int64_t a : axes)
      if (a == axis) return false;
  } else {
    return false;
  }
  (*along)[0] = axis;
  return true;
}

std::string unique_node_name(const ir::Graph& g, const std::vector<ir::Node>& added, const std::string& base) {
  std::unordered_set<std::string> names;
  for (const ir::Node& n : g.nodes) names.insert(n.name);
  for (const ir::Node& n : added) names.insert(n.name);
  std::string name = base;
  for (int i = 1; names.count(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

// A new value name, reserved by an (empty) type entry until shape inference fills it.
std::string reserve_value(ir::Graph& g, const std::string& base) {
  const std::string v = unique_value_name(g, base);
  g.types[v] = ir::TensorType{};
  return v;
}

// Rows `rows` of constant `t` along `axis` (any dtype).
Tensor gather_rows(const Tensor& t, int64_t axis, const std::vector<int64_t>& rows) {
  Shape shape = t.shape();
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[axis];
  shape[axis] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty(t.dtype(), shape);
  const auto* src = static_cast<const unsigned char*>(t.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t r = 0; r < rows.size(); ++r)
      std::memcpy(dst + (o * static_cast<int64_t>(rows.size()) + static_cast<int64_t>(r)) * inner,
                  src + (o * n + rows[r]) * inner, static_cast<size_t>(inner));
  return out;
}

ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}

// Moves the Gather g.nodes[gi] above the producer of its data; false (graph unchanged) when it cannot.
bool hoist_one(ir::Graph& g, const GraphIndex& ix, size_t gi) {
  Pick pick;
  if (!read_pick(g, g.nodes[gi], &pick)) return false;
  const std::string x = g.nodes[gi].inputs[0];
  const ir::Node* producer = ix.producer(x);
  if (!producer || ix.sole_consumer(x) != &g.nodes[gi]) return false;
  const ir::SymShape& xs = *shape_of(g, x);
  std::vector<int64_t> along;
  if (!row_wise(g, ix, *producer, static_cast<int64_t>(xs.size()), pick.axis, xs[pick.axis], &along)) return false;
  const ir::Node gather = g.nodes[gi];  // copies: g.nodes changes below
  ir::Node moved = *producer;
  const std::string producer_name = producer->name;
  const int64_t n_rows = static_cast<int64_t>(pick.rows.size());
  const std::string rows =
      add_constant(g, gather.name + "_rows", Tensor::from_vector(pick.rows, DType::kInt64, {n_rows}));
  std::vector<ir::Node> added;
  if (moved.op_type == "Reshape") {  // the target's explicit size of the axis becomes the number of rows
    std::vector<int64_t> target = *int_constant(g, moved.inputs[1]);
    int64_t& d = target[static_cast<size_t>(pick.axis)];
    if (d > 0) d = static_cast<int64_t>(pick.rows.size());
    const int64_t rank = static_cast<int64_t>(target.size());
    moved.inputs[1] = add_constant(g, moved.name + "_shape", Tensor::from_vector(target, DType::kInt64, {rank}));
  }
  for (size_t i = 0; i < moved.inputs.size(); ++i) {
    if (along[i] < 0) continue;
    if (g.is_constant(moved.inputs[i])) {  // a constant operand (a position embedding) is cut here
      const Tensor cut = gather_rows(g.constants.at(moved.inputs[i]), along[i], pick.rows);
      moved.inputs[i] = add_constant(g, moved.inputs[i] + "_rows", cut);
      continue;
    }
    const std::string v = reserve_value(g, moved.inputs[i] + "_rows");
    ir::Node n = make_node(unique_node_name(g, added, moved.name + "/rows"), "Gather", {moved.inputs[i], rows}, v);
    n.attrs["axis"] = int_attr(along[i]);
    added.push_back(std::move(n));
    moved.inputs[i] = v;
  }
  g.types.erase(x);
  for (size_t i = 1; i < moved.outputs.size(); ++i) moved.outputs[i].clear();  // unread extra outputs
  if (pick.scalar) {  // one row, then the axis squeezed where the Gather was
    moved.outputs[0] = reserve_value(g, gather.outputs[0] + "_row");
    ir::Node sq = make_node(unique_node_name(g, added, gather.name + "/squeeze"), "Squeeze", {moved.outputs[0]},
                            gather.outputs[0]);
    if (g.opset() >= 13) {
      sq.inputs.push_back(add_constant(g, gather.name + "_axis",
                                       Tensor::from_vector(std::vector<int64_t>{pick.axis}, DType::kInt64, {1})));
    } else {
      sq.attrs["axes"].kind = ir::Attribute::Kind::kInts;
      sq.attrs["axes"].ints = {pick.axis};
    }
    added.push_back(std::move(sq));
  } else {
    moved.outputs[0] = gather.outputs[0];
  }
  added.push_back(std::move(moved));
  erase_nodes(g, {gather.name, producer_name});
  for (ir::Node& n : added) g.nodes.push_back(std::move(n));
  g.topo_sort();
  return true;
}

// Gathers of one value with the same axis and rows become one (the first); returns how many were removed. Gathers
// whose output is a graph output, or read inside a subgraph, are kept.
size_t merge_duplicates(ir::Graph& g) {
  std::set<std::string> keep(g.outputs.begin(), g.outputs.end());
  for (const ir::Node& n : g.nodes)
    for (const std::string& v : ir::outer_scope_reads(n)) keep.insert(v);
  std::map<std::tuple<std::string, int64_t, std::vector<int64_t>, bool>, std::string> first;
  std::map<std::string, std::string> rename;
  std::vector<std::string> erase;
  for (const ir::Node& n : g.nodes) {
    Pick p;
    if (!read_pick(g, n, &p) || keep.count(n.outputs[0])) continue;
    auto [it, fresh] = first.emplace(std::make_tuple(n.inputs[0], p.axis, p.rows, p.scalar), n.outputs[0]);
    if (fresh) continue;
    rename[n.outputs[0]] = it->second;
    erase.push_back(n.name);
  }
  if (erase.empty()) return 0;
  erase_nodes(g, erase);
  for (ir::Node& n : g.nodes)
    for (std::string& in : n.inputs) {
      auto r = rename.find(in);
      if (r != rename.end()) in = r->second;
    }
  for (const auto& [from, to] : rename) g.types.erase(from);
  return erase.size();
}

}  // namespace

size_t hoist_gathers(ir::Graph& graph) {
  if (!fusion_enabled("gather-hoist")) return 0;
  size_t moved = 0, merged = 0;
  for (;;) {
    merged += merge_duplicates(graph);
    const GraphIndex ix(graph);
    bool hoisted = false;
    for (size_t i = 0; i < graph.nodes.size() && !hoisted; ++i) hoisted = hoist_one(graph, ix, i);
    if (!hoisted) break;
    ++moved;
    infer_shapes(graph);
  }
  if (moved > 0) {
    graph.prune_unused();
    KILNRT_LOG(kInfo, "graph '" << graph.name << "': row Gathers moved above " << moved << " op(s), " << merged
                                << " duplicate Gather(s) merged");
  }
  return moved;
}

}  // namespace kilnrt::passes
