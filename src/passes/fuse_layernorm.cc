#include "passes/fuse_layernorm.h"

#include "core/logging.h"
#include "ops/nn/fused_attention.h"
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
  if (n.has_attr("axes")) axes = n.attr_ints("axes");
  else if (n.inputs.size() > 1 && g.is_constant(n.inputs[1])) axes = ops::tensor_to_int64s(g.constants.at(n.inputs[1]));
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
    if (is_op(&n, "Div") && n.inputs[0] == d) div = &n;
    else if (is_op(&n, "Pow") && n.inputs[0] == d && scalar_constant(g, n.inputs[1]) == 2.0) sq = &n;
    else if (is_op(&n, "Mul") && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d) sq = &n;
    else return false;
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

// Add(a, b) read only by a LayerNormalization over the last dim (ONNX's, with one output, or com.kilnrt's) ->
// com.kilnrt:AddLayerNorm(X, R, scale, bias): X the operand of the Add's shape, R the other when it repeats along X.
bool match_add(const ir::Graph& g, const GraphIndex& ix, const ir::Node& add, Match* m) {
  if (!is_op(&add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) return false;
  const ir::Node* ln = ix.sole_consumer(add.outputs[0]);
  if (!ln || ln->op_type != "LayerNormalization" || (!ln->domain.empty() && ln->domain != ops::nn::kKilnrtDomain) ||
      ln->inputs.empty() || ln->inputs[0] != add.outputs[0])
    return false;
  for (size_t i = 1; i < ln->outputs.size(); ++i)
    if (!ln->outputs[i].empty() && ix.uses(ln->outputs[i]) > 0) return false;
  const ir::TensorType* yt = g.type_of(add.outputs[0]);
  if (!yt || !yt->has_shape || yt->shape.empty() || !sym_shape_known(yt->shape)) return false;
  const int64_t rank = static_cast<int64_t>(yt->shape.size());
  int64_t axis = ln->attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const int64_t n = yt->shape.back().value;
  // The CUDA kernel's vector path: rows of a multiple of 16 bytes in float32 and 16-bit storage, at most 1024 floats.
  if (axis != rank - 1 || n % 8 != 0 || n > 1024) return false;
  if (yt->dtype != DType::kFloat32 && yt->dtype != DType::kFloat16 && yt->dtype != DType::kBFloat16) return false;
  const Shape y = ir::sym_shape_to_shape(yt->shape);
  for (int xi = 0; xi < 2; ++xi) {
    const ir::TensorType* xt = g.type_of(add.inputs[xi]);
    const ir::TensorType* rt = g.type_of(add.inputs[1 - xi]);
    if (!xt || !rt || !xt->has_shape || !rt->has_shape || !sym_shape_known(rt->shape) ||
        ir::sym_shape_to_shape(xt->shape) != y || xt->dtype != yt->dtype || rt->dtype != yt->dtype ||
        !ops::nn::add_layernorm_residual_repeats(y, ir::sym_shape_to_shape(rt->shape)))
      continue;
    ir::Node& f = m->fused;
    f.name = ln->name + "/add_layernorm";
    f.op_type = "AddLayerNorm";
    f.domain = ops::nn::kKilnrtDomain;
    f.inputs = {add.inputs[xi], add.inputs[1 - xi]};
    for (size_t i = 1; i < 3; ++i) f.inputs.push_back(i < ln->inputs.size() ? ln->inputs[i] : "");
    while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = {ln->outputs[0]};
    f.attrs["epsilon"] = ln->has_attr("epsilon") ? ln->attrs.at("epsilon") : ir::Attribute{};
    if (!ln->has_attr("epsilon")) {
      f.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
      f.attrs["epsilon"].f = 1e-5f;
    }
    m->erase = {add.name, ln->name};
    return true;
  }
  return false;
}

}  // namespace

size_t fuse_add_layernorm(ir::Graph& graph) {
  if (!fusion_enabled("add-layernorm")) return 0;
  return apply_fusions(graph, match_add, "Add + LayerNorm(s)");
}

size_t fuse_layernorm(ir::Graph& graph) {
  if (!fusion_enabled("layernorm")) return 0;
  return apply_fusions(graph, match, "LayerNorm(s)");
}

}  // namespace kilnrt::passes
