#include "passes/fuse_squeeze_excite.h"

#include <cstdlib>
#include <string>

#include "ops/nn/fused_conv/fused_conv.h"
#include "ops/nn/squeeze_excite/squeeze_excite.h"
#include "ops/op_registry.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// The mean over H and W of a 4-D value, keeping dims: GlobalAveragePool, or ReduceMean with axes {2, 3} (attribute,
// or constant input from opset 18).
bool spatial_mean(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || n.outputs.size() != 1) return false;
  const ir::SymShape* s = shape_of(g, n.inputs[0]);
  if (!s || s->size() != 4) return false;
  if (is_op(&n, "GlobalAveragePool")) return true;
  if (!is_op(&n, "ReduceMean") || n.attr_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    axes = n.attr_ints("axes");
  } else if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const auto c = int_constant(g, n.inputs[1]);
    if (!c) return false;
    axes = *c;
  }
  if (axes.size() != 2) return false;
  bool red[4] = {false, false, false, false};
  for (int64_t a : axes) {
    if (a < -4 || a > 3) return false;
    red[a < 0 ? a + 4 : a] = true;
  }
  return red[2] && red[3];
}

// A FusedConv reading `in` whose convolution is a plain 1x1 one (group 1, stride 1, no pads, no residual) with a
// constant weight of `dtype` [M, K, 1, 1] and a constant bias [M] or none. Sets *m and *k.
bool pointwise_conv(const ir::Graph& g, const ir::Node* n, const std::string& in, DType dtype, int64_t* m, int64_t* k) {
  if (!n || n->op_type != ops::nn::kFusedConvOp || n->domain != ops::nn::kFusedConvDomain) return false;
  if (n->inputs.size() < 2 || n->inputs[0] != in || n->outputs.size() != 1) return false;
  if (n->inputs.size() > 3 && !n->inputs[3].empty()) return false;  // residual
  if (n->attr_int("group", 1) != 1) return false;
  for (const char* a : {"strides", "dilations"})
    for (int64_t v : n->attr_ints(a, std::vector<int64_t>{}))
      if (v != 1) return false;
  for (int64_t v : n->attr_ints("pads", std::vector<int64_t>{}))
    if (v != 0) return false;
  const std::string pad = n->attr_string("auto_pad", std::string("NOTSET"));
  if (pad != "NOTSET" && pad != "VALID") return false;
  auto w = g.constants.find(n->inputs[1]);
  if (w == g.constants.end() || w->second.dtype() != dtype || w->second.rank() != 4) return false;
  const Shape& ws = w->second.shape();
  if (ws[2] != 1 || ws[3] != 1) return false;
  *m = ws[0];
  *k = ws[1];
  if (n->inputs.size() > 2 && !n->inputs[2].empty()) {
    auto b = g.constants.find(n->inputs[2]);
    if (b == g.constants.end() || b->second.dtype() != dtype || b->second.numel() != *m) return false;
  }
  return true;
}

std::string bias_of(const ir::Node& conv) { return conv.inputs.size() > 2 ? conv.inputs[2] : std::string(); }

bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& mean, FusionMatch* m) {
  if (!spatial_mean(g, mean)) return false;
  const std::string x = mean.inputs[0];
  const ir::TensorType* xt = g.type_of(x);
  if (!xt || !float_type(xt->dtype)) return false;
  const ir::Dim& cdim = xt->shape[1];
  if (!cdim.known()) return false;
  int64_t cs = 0, c_in = 0, c_out = 0, cs_in = 0;
  const ir::Node* fc1 = ix.sole_consumer(mean.outputs[0]);
  if (!pointwise_conv(g, fc1, mean.outputs[0], xt->dtype, &cs, &c_in) || c_in != cdim.value) return false;
  const ir::Node* fc2 = ix.sole_consumer(fc1->outputs[0]);
  if (!pointwise_conv(g, fc2, fc1->outputs[0], xt->dtype, &c_out, &cs_in) || c_out != c_in || cs_in != cs) return false;
  const ir::Node* mul = ix.sole_consumer(fc2->outputs[0]);
  if (!is_op(mul, "Mul") || mul->inputs.size() != 2 || mul->outputs.size() != 1) return false;
  const std::string& s = fc2->outputs[0];
  if (!((mul->inputs[0] == x && mul->inputs[1] == s) || (mul->inputs[0] == s && mul->inputs[1] == x))) return false;
  ir::Node& f = m->fused;
  f.name = mean.name + "/squeeze_excite";
  f.op_type = ops::nn::kSqueezeExciteOp;
  f.domain = ops::nn::kFusedConvDomain;
  f.inputs = {x, fc1->inputs[1], bias_of(*fc1), fc2->inputs[1], bias_of(*fc2)};
  f.outputs = mul->outputs;
  auto copy = [&](const ir::Node& from, const char* key, const char* as) {
    if (from.has_attr(key)) f.attrs[as] = from.attrs.at(key);
  };
  copy(*fc1, "activation", "activation");
  copy(*fc1, "activation_params", "activation_params");
  copy(*fc2, "activation", "gate");
  copy(*fc2, "activation_params", "gate_params");
  try {
    ops::nn::read_squeeze_excite(f);  // an activation the op does not know: leave the block alone
  } catch (const Error&) {
    return false;
  }
  m->erase = {mean.name, fc1->name, fc2->name, mul->name};
  return true;
}

}  // namespace

size_t fuse_squeeze_excite(ir::Graph& graph) {
  // On by default with the many-CTA kernels (H100 fp16 whole engine, 2026-11-22, fused vs not: efficientnet_b0 b1
  // 0.504 -> 0.458 ms, b32 1.664 -> 1.474; mobilenet_v3_large b1 0.311 -> 0.303, b32 0.803 -> 0.787;
  // bench/results/README.md). KILNRT_SQUEEZE_EXCITE=0 turns it off.
  const char* on = std::getenv("KILNRT_SQUEEZE_EXCITE");
  if (on && std::string(on) == "0") return 0;
  if (!fusion_enabled("squeeze-excite")) return 0;
  return apply_fusions(graph, match, "squeeze-excite block(s)");
}

}  // namespace kilnrt::passes
