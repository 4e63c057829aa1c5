#include "passes/constant_folding.h"

#include <unordered_set>

#include "core/check.h"
#include "ops/op_registry.h"

namespace kilnrt::passes {
namespace {

bool is_nondeterministic(const ir::Node& n) {
  return n.op_type.rfind("Random", 0) == 0 || n.op_type == "Multinomial" || n.op_type == "Bernoulli";
}

// Output of a Shape node whose input has a fully known shape.
bool fold_shape_node(ir::Graph& graph, const ir::Node& node) {
  if (node.op_type != "Shape" || !node.domain.empty()) return false;
  // A malformed Shape (no input / output: a fuzzed model) is left to shape inference, which names the node.
  if (node.inputs.empty() || node.inputs[0].empty() || node.outputs.empty() || node.outputs[0].empty()) return false;
  const ir::TensorType* t = graph.type_of(node.inputs[0]);
  if (!t || !t->has_shape || !ir::sym_shape_known(t->shape)) return false;
  const int64_t rank = static_cast<int64_t>(t->shape.size());
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(t->shape[i].value);
  graph.constants[node.outputs[0]] = Tensor::from_vector(dims, DType::kInt64, {static_cast<int64_t>(dims.size())});
  return true;
}

}  // namespace

size_t fold_constants(ir::Graph& graph, size_t max_output_bytes) {
  const auto& registry = ops::OpRegistry::instance();
  std::unordered_set<std::string> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  size_t folded = 0;
  for (ir::Node& node : graph.nodes) {
    bool produces_graph_output = false;
    for (const std::string& o : node.outputs) produces_graph_output |= graph_outputs.count(o) != 0;
    // Graph outputs stay produced by nodes so that engines always have a layer writing them.
    if (produces_graph_output) {
      kept.push_back(std::move(node));
      continue;
    }
    if (fold_shape_node(graph, node)) {
      ++folded;
      continue;
    }
    // Nodes with subgraphs (If/Loop/Scan) read outer-scope values the kernel context does not carry here: kept.
    bool all_const = !is_nondeterministic(node) && ir::outer_scope_reads(node).empty();
    for (const auto& kv : node.attrs) all_const &= kv.second.kind != ir::Attribute::Kind::kGraph;
    for (const std::string& in : node.inputs) all_const &= in.empty() || graph.is_constant(in);
    if (!all_const) {
      kept.push_back(std::move(node));
      continue;
    }
    const int64_t opset = graph.opset(node.domain);
    const ops::OpSchema& schema = registry.get(node, opset);
    ops::CpuContext ctx{node, opset, {}, {}};
    for (const std::string& in : node.inputs) ctx.inputs.push_back(in.empty() ? nullptr : &graph.constants.at(in));
    ctx.outputs.resize(node.outputs.size());
    try {
      schema.cpu(ctx);
    } catch (const Error& e) {
      if (e.where().find(node.name) != std::string::npos) throw;
      throw e.with_context(node.describe());
    }
    size_t bytes = 0;
    for (const Tensor& t : ctx.outputs) bytes += t.defined() ? t.nbytes() : 0;
    if (bytes > max_output_bytes || !ctx.seq_outputs.empty()) {  // sequences are not constants: the node stays
      kept.push_back(std::move(node));
      continue;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) graph.constants[node.outputs[i]] = ctx.outputs[i].clone();
    ++folded;
  }
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace kilnrt::passes
