#include "passes/control_flow_types.h"

#include <exception>
#include <new>

#include "core/check.h"
#include "passes/shape_inference.h"

namespace kilnrt::passes {
namespace {

DType dtype_of(const ir::Graph& g, const std::string& name) {
  if (g.is_constant(name)) return g.constants.at(name).dtype();
  const ir::TensorType* t = g.type_of(name);
  return t ? t->dtype : DType::kUndefined;
}

// Dtypes of the body's outputs when inferred on its own; empty when the body cannot be inferred.
std::vector<DType> body_output_dtypes(const ir::Node& node, const ir::Graph& outer, const std::string& attr,
                                      const std::vector<DType>& formal) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end() || it->second.kind != ir::Attribute::Kind::kGraph || !it->second.g) return {};
  ir::Graph g = *it->second.g;  // a copy: the node's body stays as imported
  for (const auto& [domain, version] : outer.opsets) g.opsets.emplace(domain, version);
  for (size_t i = 0; i < g.inputs.size() && i < formal.size(); ++i) {
    ir::TensorType& t = g.types[g.inputs[i]];
    if (t.dtype == DType::kUndefined) t.dtype = formal[i];
  }
  for (const std::string& name : ir::outer_scope_reads(node)) {
    if (outer.is_constant(name)) {
      g.constants.emplace(name, outer.constants.at(name));
    } else if (const ir::TensorType* t = outer.type_of(name)) {
      g.types.emplace(name, *t);
    }
  }
  try {
    infer_shapes(g);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kOutOfMemory) throw;  // an allocation failure is never a typing question
    return {};
  } catch (const std::exception&) {
    // Best effort (the bodies were not inferred here before): the types stay unknown, and a backend that needs
    // them says so naming the consumer; a malformed body is reported where it runs.
    return {};
  }
  std::vector<DType> out;
  for (const std::string& o : g.outputs) {
    const ir::TensorType* t = g.type_of(o);
    out.push_back(t && t->is_sequence ? DType::kUndefined : dtype_of(g, o));  // sequences: typed by their producers
  }
  return out;
}

DType at(const std::vector<DType>& v, size_t i) { return i < v.size() ? v[i] : DType::kUndefined; }

}  // namespace

int type_control_flow_outputs(const ir::Node& node, ir::Graph& graph) {
  const bool is_if = node.op_type == "If", is_loop = node.op_type == "Loop", is_scan = node.op_type == "Scan";
  const bool is_map = node.op_type == "SequenceMap";  // outputs: sequences whose element dtype is the body's
  if (!node.domain.empty() || !(is_if || is_loop || is_scan || is_map)) return 0;
  bool missing = false;
  for (const std::string& o : node.outputs) {
    const ir::TensorType* t = o.empty() ? nullptr : graph.type_of(o);
    missing |= !o.empty() && (!t || (t->dtype == DType::kUndefined && (is_map || !t->is_sequence)));
  }
  if (!missing) return 0;
  // Per node output: its dtype from the bodies.
  std::vector<DType> dtypes(node.outputs.size(), DType::kUndefined);
  if (is_if) {
    const std::vector<DType> a = body_output_dtypes(node, graph, "then_branch", {});
    const std::vector<DType> b = body_output_dtypes(node, graph, "else_branch", {});
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const DType x = at(a, i), y = at(b, i);
      dtypes[i] = x == y || y == DType::kUndefined ? x : x == DType::kUndefined ? y : DType::kUndefined;
    }
  } else {
    std::vector<DType> formal;
    size_t first_out = 0;  // body outputs: Loop (cond, carried..., scans...), Scan (states..., scans...)
    if (is_loop) {
      formal = {DType::kInt64, DType::kBool};
      for (size_t i = 2; i < node.inputs.size(); ++i) formal.push_back(dtype_of(graph, node.inputs[i]));
      first_out = 1;
    } else if (is_map) {  // body inputs: the element dtype of each sequence input, or the tensor's dtype
      for (const std::string& in : node.inputs) formal.push_back(in.empty() ? DType::kUndefined : dtype_of(graph, in));
    } else {
      for (size_t i = graph.opset(node.domain) < 9 ? 1 : 0; i < node.inputs.size(); ++i)
        formal.push_back(node.inputs[i].empty() ? DType::kUndefined : dtype_of(graph, node.inputs[i]));
    }
    const std::vector<DType> body = body_output_dtypes(node, graph, "body", formal);
    for (size_t i = 0; i < dtypes.size(); ++i) dtypes[i] = at(body, first_out + i);
  }
  int typed = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty() || dtypes[i] == DType::kUndefined) continue;
    ir::TensorType& t = graph.types[node.outputs[i]];
    if (t.dtype != DType::kUndefined || (t.is_sequence && !is_map)) continue;
    t.dtype = dtypes[i];
    ++typed;
  }
  return typed;
}

}  // namespace kilnrt::passes
