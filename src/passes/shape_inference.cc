#include "passes/shape_inference.h"

#include "core/check.h"
#include "passes/control_flow_types.h"
#include "ops/op_registry.h"

namespace kilnrt::passes {
namespace {

// Merges an inferred type with one declared in the model.
ir::TensorType merge_types(const ir::TensorType& inferred, const ir::TensorType* declared) {
  if (!declared) return inferred;
  ir::TensorType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared->dtype;
  if (!out.has_shape && declared->has_shape) {
    out.has_shape = true;
    out.shape = declared->shape;
  } else if (out.has_shape && declared->has_shape && declared->shape.size() == out.shape.size()) {
    for (size_t i = 0; i < out.shape.size(); ++i) {
      const ir::Dim& d = declared->shape[i];
      if (!out.shape[i].known() && (d.known() || (out.shape[i].param.empty() && !d.param.empty()))) out.shape[i] = d;
    }
  }
  return out;
}

}  // namespace

void infer_shapes(ir::Graph& graph) {
  for (const auto& [name, t] : graph.constants) {
    ir::TensorType& type = graph.types[name];
    type.dtype = t.dtype();
    type.has_shape = true;
    type.shape = ir::shape_to_sym(t.shape());
  }
  const auto& registry = ops::OpRegistry::instance();
  for (const ir::Node& node : graph.nodes) {
    const int64_t opset = graph.opset(node.domain);
    const ops::OpSchema& schema = registry.get(node, opset);
    ops::ShapeContext ctx{node, opset, {}, {}, {}};
    for (const std::string& in : node.inputs) {
      ctx.inputs.push_back(in.empty() ? nullptr : graph.type_of(in));
      auto c = graph.constants.find(in);
      ctx.values.push_back(c == graph.constants.end() ? nullptr : &c->second);
      KILNRT_CHECK(in.empty() || ctx.inputs.back() != nullptr, kInternal, node.describe(),
                   "input '" << in << "' has no type");
    }
    ctx.outputs.resize(node.outputs.size());
    if (schema.infer) {
      try {
        schema.infer(ctx);
      } catch (const Error& e) {
        if (e.where().find(node.name) != std::string::npos) throw;
        throw e.with_context(node.describe());
      }
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      auto it = graph.types.find(node.outputs[i]);
      ir::TensorType merged = merge_types(ctx.outputs[i], it == graph.types.end() ? nullptr : &it->second);
      graph.types[node.outputs[i]] = std::move(merged);
    }
    type_control_flow_outputs(node, graph);  // If/Loop/Scan outputs the bodies do not declare
  }
}

}  // namespace kilnrt::passes
