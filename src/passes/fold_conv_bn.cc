#include "passes/fold_conv_bn.h"

#include <cmath>
#include <unordered_map>
#include <vector>

#include "passes/fusion_control.h"
#include "passes/pattern_util.h"
#include "passes/value_uses.h"

namespace kilnrt::passes {
namespace {

// A float32 constant with `numel` elements, or nullptr.
const Tensor* float_constant(const ir::Graph& g, const std::string& name, int64_t numel) {
  if (name.empty()) return nullptr;
  auto it = g.constants.find(name);
  if (it == g.constants.end() || it->second.dtype() != DType::kFloat32) return nullptr;
  if (numel >= 0 && it->second.numel() != numel) return nullptr;
  return &it->second;
}

// Folds BN node `bn` into its producer `conv` when everything fits; returns false (graph untouched) otherwise.
bool try_fold(ir::Graph& g, ir::Node& conv, const ir::Node& bn, const std::unordered_map<std::string, int>& uses) {
  const bool transpose = conv.op_type == "ConvTranspose";
  if (bn.inputs.size() < 5) return false;
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1) return false;
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    if (bn.outputs[i].empty()) continue;
    auto u = uses.find(bn.outputs[i]);
    if (u != uses.end() && u->second > 0) return false;
  }
  const Tensor* w = float_constant(g, conv.inputs.size() > 1 ? conv.inputs[1] : "", -1);
  if (!w || w->rank() < 3) return false;
  const int64_t group = conv.attr_int("group", 1);
  if (group < 1 || w->dim(0) % group != 0) return false;
  const int64_t m_out = transpose ? w->dim(1) * group : w->dim(0);
  const Tensor* scale = float_constant(g, bn.inputs[1], m_out);
  const Tensor* beta = float_constant(g, bn.inputs[2], m_out);
  const Tensor* mean = float_constant(g, bn.inputs[3], m_out);
  const Tensor* var = float_constant(g, bn.inputs[4], m_out);
  if (!scale || !beta || !mean || !var) return false;
  const Tensor* bias = nullptr;
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    bias = float_constant(g, conv.inputs[2], m_out);
    if (!bias) return false;
  }
  const double eps = bn.attr_float("epsilon", 1e-5f);
  std::vector<double> s(m_out);
  Tensor new_b = Tensor::empty(DType::kFloat32, {m_out});
  for (int64_t m = 0; m < m_out; ++m) {
    s[m] = static_cast<double>(scale->data<float>()[m]) / std::sqrt(static_cast<double>(var->data<float>()[m]) + eps);
    if (!std::isfinite(s[m])) return false;  // var + eps == 0 (or inf / NaN parameters): BN's result is not a conv
    const double b0 = bias ? bias->data<float>()[m] : 0.0;
    new_b.data<float>()[m] =
        static_cast<float>((b0 - mean->data<float>()[m]) * s[m] + static_cast<double>(beta->data<float>()[m]));
  }
  Tensor new_w = Tensor::empty(DType::kFloat32, w->shape());
  const int64_t per = w->numel() / (w->dim(0) * w->dim(1));  // spatial kernel size
  const int64_t c0 = w->dim(0), c1 = w->dim(1);
  const float* src = w->data<float>();
  float* dst = new_w.data<float>();
  for (int64_t a = 0; a < c0; ++a) {
    for (int64_t b = 0; b < c1; ++b) {
      // Conv: W is (M, C/group, k...), output channel a. ConvTranspose: W is (C, M/group, k...), output channel
      // (group of input channel a) * M/group + b.
      const int64_t m = transpose ? (a / (c0 / group)) * c1 + b : a;
      const double f = s[m];
      const int64_t off = (a * c1 + b) * per;
      for (int64_t i = 0; i < per; ++i) dst[off + i] = static_cast<float>(src[off + i] * f);
    }
  }
  const std::string base = conv.name.empty() ? bn.outputs[0] : conv.name;
  const std::string w_name = add_constant(g, base + "/bn_folded_W", std::move(new_w));
  const std::string b_name = add_constant(g, base + "/bn_folded_B", std::move(new_b));
  conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 3));
  conv.inputs[1] = w_name;
  conv.inputs[2] = b_name;
  g.types.erase(conv.outputs[0]);
  conv.outputs[0] = bn.outputs[0];
  return true;
}

}  // namespace

size_t fold_conv_batchnorm(ir::Graph& graph) {
  if (!fusion_enabled("conv-bn")) return 0;
  const std::unordered_map<std::string, int> uses = count_value_uses(graph);
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& o : graph.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<bool> removed(graph.nodes.size(), false);
  size_t folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& bn = graph.nodes[i];
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.empty() || bn.outputs.empty()) continue;
    auto p = producer.find(bn.inputs[0]);
    if (p == producer.end() || removed[p->second]) continue;
    ir::Node& conv = graph.nodes[p->second];
    if ((conv.op_type != "Conv" && conv.op_type != "ConvTranspose") || !conv.domain.empty()) continue;
    if (conv.outputs.size() != 1 || conv.outputs[0] != bn.inputs[0]) continue;
    auto u = uses.find(bn.inputs[0]);
    if (u == uses.end() || u->second != 1) continue;  // the conv output is read elsewhere too (or is an output)
    if (!try_fold(graph, conv, bn, uses)) continue;
    removed[i] = true;
    ++folded;
  }
  if (folded == 0) return 0;
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size() - folded);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace kilnrt::passes
