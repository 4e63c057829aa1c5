// Float32 islands for float16 / bfloat16 tensors: the float32 view of a node and the checks around it
// (float32_island.h).
#include "backends/cuda/float32_island.h"

#include <algorithm>

namespace kilnrt::backends::cuda {
namespace {

Tensor to_float32(const Tensor& t) {
  Tensor f = Tensor::empty(DType::kFloat32, t.shape());
  const uint16_t* src = static_cast<const uint16_t*>(t.raw());
  float* dst = f.data<float>();
  const bool bf = t.dtype() == DType::kBFloat16;
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = bf ? bfloat16_to_float(src[i]) : half_to_float(src[i]);
  return f;
}

// Nodes a float32 view would change the meaning of: subgraphs (If / Loop / Scan bodies), an output dtype named by an
// attribute ("to", "dtype": the layer would write that type into the float32 scratch), 16-bit tensor attributes.
bool view_unsafe(const ir::Node& node) {
  for (const auto& [k, a] : node.attrs) {
    if (a.kind == ir::Attribute::Kind::kGraph || k == "to" || k == "dtype") return true;
    if (a.kind == ir::Attribute::Kind::kTensor && is_16bit_float(a.t.dtype())) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<ir::Graph> float32_island_view(const ir::Node& node, const ir::Graph& graph, std::string& why) {
  if (view_unsafe(node)) return nullptr;
  auto view = std::make_shared<ir::Graph>();
  view->name = graph.name;
  view->opsets = graph.opsets;
  view->producer = graph.producer;
  bool any16 = false;
  auto add = [&](const std::string& name) {
    if (name.empty() || view->types.count(name) || view->constants.count(name)) return;
    auto c = graph.constants.find(name);
    if (c != graph.constants.end()) {
      const bool c16 = is_16bit_float(c->second.dtype());
      any16 |= c16;
      view->constants[name] = c16 ? to_float32(c->second) : c->second;
    }
    const ir::TensorType* t = graph.type_of(name);
    if (!t) return;
    ir::TensorType vt = *t;
    if (!vt.is_sequence && is_16bit_float(vt.dtype)) {
      any16 = true;
      vt.dtype = DType::kFloat32;
    }
    view->types[name] = vt;
  };
  for (const std::string& in : node.inputs) add(in);
  for (const std::string& out : node.outputs) add(out);
  if (!any16) return nullptr;
  ir::Node copy = node;
  // In --fp16 / --bf16 engines the node carries a 16-bit precision: the island's layer computes in float32.
  if (copy.has_attr(kPrecisionAttr)) {
    const Precision p = node_precision(copy);
    if (p == Precision::kFp16 || p == Precision::kBf16) copy.attrs.erase(kPrecisionAttr);
  }
  view->nodes.push_back(std::move(copy));
  for (const std::string& in : node.inputs)
    if (!in.empty() && !view->is_constant(in)) view->inputs.push_back(in);
  for (const std::string& out : node.outputs)
    if (!out.empty()) view->outputs.push_back(out);
  if (!cuda_supports(view->nodes[0], *view).empty()) return nullptr;
  why.clear();
  return view;
}

std::string cuda_supports_or_island(const ir::Node& node, const ir::Graph& graph) {
  std::string why = cuda_supports(node, graph);
  if (!why.empty()) float32_island_view(node, graph, why);
  return why;
}

std::string island_layer_problem(const CudaLayer& layer, const ir::Node& node, const ir::Graph& graph) {
  if (layer.is_alias()) return "a float32 island cannot be an alias of its input";
  for (int i : layer.host_inputs()) {
    if (i < 0 || static_cast<size_t>(i) >= node.inputs.size() || node.inputs[size_t(i)].empty()) continue;
    const ir::TensorType* t = graph.type_of(node.inputs[size_t(i)]);
    if (t && is_16bit_float(t->dtype))
      return "input '" + node.inputs[size_t(i)] + "' is read on the host and is " + dtype_name(t->dtype);
  }
  return "";
}

}  // namespace kilnrt::backends::cuda
