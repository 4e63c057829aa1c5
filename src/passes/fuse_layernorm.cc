#include "passes/fuse_layernorm.h"

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/op_registry.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

// A ReduceMean over the last axis only, keeping dims (axes from the attribute, or from a constant input at opset 18).
bool mean_over_last(const ir::Graph& g, const ir::Node& n) {
  if (!is_op(&n, "ReduceMean") || n.outputs.size() != 1 || n.attr_int("keepdims", 1) != 1) return false;
  const ir::TensorType* t = g.type_of(n.inputs[0]);
  if (!t || !t->has_shape || t->shape.empty()) return false;
  const int64_t r = static_cast<int64_t>(t->shape.size());
  std::vector<int64_t> axes;
  if (n.has_attr("axes"))
    axes = n.attr_ints("axes");
  else if (n.inputs.size() > 1 && g.is_constant(n.inputs[1]))
    axes = ops::tensor_to_int64s(g.constants.at(n.inputs[1]));
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == r - 1);
}

// A constant of the last dim's size n laid out along the last dim only.
bool vector_constant(const ir::Graph& g, const std::string& v, int64_t n, DType dt) {
  auto it = g.constants.find(v);
  if (it == g.constants.end() || it->second.dtype() != dt || it->second.numel() != n || n < 1) return false;
  return it->second.shape().back() == n;
}

using Match = FusionMatch;

bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& r1, Match* m) {
  if (!mean_over_last(g, r1)) return false;
  const std::string x = r1.inputs[0];
  const ir::TensorType* xt = g.type_of(x);
  if (xt->dtype != DType::kFloat32 && xt->dtype != DType::kFloat16 && xt->dtype != DType::kBFloat16) return false;
  const ir::Node* sub = ix.sole_consumer(r1.outputs[0]);
  if (!is_op(sub, "Sub") || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != r1.outputs[0])
    return false;
  const std::string d = sub->outputs[0];
  // d is read by the square and by the final Div (twice when the square is Mul(d, d)).
  const ir::Node* sq = nullptr;
  const ir::Node* div = nullptr;
  const ir::Node* r2 = nullptr;
  for (const ir::Node& n : g.nodes) {
    bool reads = false;
    for (const std::string& i : n.inputs) reads |= i == d;
    if (!reads) continue;
    if (is_op(&n, "Div") && n.inputs[0] == d)
      div = &n;
    else if (is_op(&n, "Pow") && n.inputs[0] == d && scalar_constant(g, n.inputs[1]) == 2.0)
      sq = &n;
    else if (is_op(&n, "Mul") && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d)
      sq = &n;
    else
      return false;
  }
  if (!sq || !div || ix.uses(d) != (sq->op_type == "Mul" ? 3 : 2)) return false;
  r2 = ix.sole_consumer(sq->outputs[0]);
  if (!r2 || !mean_over_last(g, *r2)) return false;
  const ir::Node* add = ix.sole_consumer(r2->outputs[0]);
  double eps = 0;
  int other = 0;
  if (!is_op(add, "Add") || !binary_with_scalar(g, *add, &eps, &other) || eps < 0) return false;
  const ir::Node* sqrt = ix.sole_consumer(add->outputs[0]);
  if (!is_op(sqrt, "Sqrt") || ix.sole_consumer(sqrt->outputs[0]) != div || div->inputs[1] != sqrt->outputs[0])
    return false;
  std::vector<std::string> erase = {r1.name, sub->name, sq->name, r2->name, add->name, sqrt->name, div->name};
  const ir::Dim& last = xt->shape.back();
  if (!last.known()) return false;
  std::string out = div->outputs[0], scale, bias;
  const ir::Node* mul = ix.sole_consumer(out);
  if (is_op(mul, "Mul") && mul->inputs.size() == 2) {
    const std::string w = mul->inputs[0] == out ? mul->inputs[1] : mul->inputs[0];
    if (vector_constant(g, w, last.value, xt->dtype)) {
      scale = w;
      erase.push_back(mul->name);
      out = mul->outputs[0];
      const ir::Node* badd = ix.sole_consumer(out);
      if (is_op(badd, "Add") && badd->inputs.size() == 2) {
        const std::string b = badd->inputs[0] == out ? badd->inputs[1] : badd->inputs[0];
        if (vector_constant(g, b, last.value, xt->dtype)) {
          bias = b;
          erase.push_back(badd->name);
          out = badd->outputs[0];
        }
      }
    }
  }
  ir::Node& f = m->fused;
  f.name = r1.name + "/fused_layernorm";
  f.op_type = "LayerNormalization";
  f.domain = ops::nn::kKilnrtDomain;
  f.inputs = {x};
  if (!scale.empty()) f.inputs.push_back(scale);
  if (!bias.empty()) f.inputs.push_back(bias);
  f.outputs = {out};
  ir::Attribute a, e;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = -1;
  e.kind = ir::Attribute::Kind::kFloat;
  e.f = static_cast<float>(eps);
  f.attrs["axis"] = a;
  f.attrs["epsilon"] = e;
  m->erase = std::move(erase);
  return true;
}

}  // namespace

size_t fuse_layernorm(ir::Graph& graph) {
  if (!fusion_enabled("layernorm")) return 0;
  return apply_fusions(graph, match, "LayerNorm(s)");
}

}  // namespace kilnrt::passes
