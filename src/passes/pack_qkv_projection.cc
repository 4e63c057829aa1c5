#include "passes/pack_qkv_projection.h"

#include <cstring>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// Dims equal and each known or named (an unnamed unknown dim proves nothing).
bool same_dim(const ir::Dim& a, const ir::Dim& b) { return (a.known() || !a.param.empty()) && a == b; }

// One attention operand traced back to its projection.
struct Projection {
  std::string x, w, bias;  // MatMul input, weight [K, N], bias [N] ("" without)
  int64_t heads = 0, head_size = 0;
  const ir::SymShape* lin_shape = nullptr;  // the projection's [L..., N]
};

// `v` = Reshape(...Reshape(lin)) with lin = MatMul(x, W const) [+ bias const], every value read only by the next
// step, v of shape [L..., H, D] for lin [L..., H * D]. Fills `p` when so.
bool trace_projection(const ir::Graph& g, const GraphIndex& ix, const std::string& v, Projection* p) {
  if (ix.uses(v) != 1) return false;
  std::string cur = v;
  int reshapes = 0;
  // Any allowzero (dynamo writes 1): only the Reshapes' inferred output shapes matter, and the new Reshape copies
  // the leading dims from the packed projection.
  for (const ir::Node* r = ix.producer(cur); is_op(r, "Reshape") && r->inputs.size() == 2 && r->outputs.size() == 1;
       r = ix.producer(cur)) {
    if (ix.uses(r->inputs[0]) != 1) return false;
    cur = r->inputs[0];
    ++reshapes;
  }
  if (reshapes == 0) return false;
  const ir::Node* n = ix.producer(cur);
  if (!n || n->outputs.size() != 1) return false;
  const ir::Node* mm = n;
  std::string bias;
  if (is_op(n, "Add") && n->inputs.size() == 2) {
    for (int i = 0; i < 2 && bias.empty(); ++i) {
      const ir::Node* q = ix.producer(n->inputs[1 - i]);
      if (g.is_constant(n->inputs[i]) && is_op(q, "MatMul") && ix.uses(n->inputs[1 - i]) == 1) {
        bias = n->inputs[i];
        mm = q;
      }
    }
    if (bias.empty()) return false;
  }
  if (!is_op(mm, "MatMul") || mm->inputs.size() != 2 || mm->outputs.size() != 1 || !g.is_constant(mm->inputs[1]))
    return false;
  const Tensor& w = g.constants.at(mm->inputs[1]);
  if (w.rank() != 2 || !float_type(w.dtype())) return false;
  const int64_t n_out = w.shape()[1];
  if (!bias.empty()) {
    const Tensor& b = g.constants.at(bias);
    if (b.rank() != 1 || b.numel() != n_out || b.dtype() != w.dtype()) return false;
  }
  const ir::SymShape* ls = shape_of(g, cur);
  const ir::SymShape* vs = shape_of(g, v);
  if (!ls || !vs || ls->size() < 2 || vs->size() != ls->size() + 1) return false;
  const size_t r = ls->size();
  if (!ls->back().known() || ls->back().value != n_out || !(*vs)[r - 1].known() || !(*vs)[r].known()) return false;
  const int64_t h = (*vs)[r - 1].value, d = (*vs)[r].value;
  if (h < 1 || d < 1 || h * d != n_out) return false;
  for (size_t i = 0; i + 1 < r; ++i)
    if (!same_dim((*vs)[i], (*ls)[i])) return false;
  p->x = mm->inputs[0];
  p->w = mm->inputs[1];
  p->bias = bias;
  p->heads = h;
  p->head_size = d;
  p->lin_shape = ls;
  return true;
}

// The three projections of attention node `a` when they can be packed.
bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& a, Projection p[3]) {
  if (a.op_type != "FusedAttention" || a.domain != ops::nn::kKilnrtDomain || a.inputs.size() < 3) return false;
  for (const char* part : {"q_part", "k_part", "v_part"})
    if (a.attrs.count(part)) return false;
  if (a.inputs[0] == a.inputs[1] || a.inputs[0] == a.inputs[2] || a.inputs[1] == a.inputs[2]) return false;
  for (int i = 0; i < 3; ++i)
    if (!trace_projection(g, ix, a.inputs[i], &p[i])) return false;
  const Tensor& w0 = g.constants.at(p[0].w);
  for (int i = 1; i < 3; ++i) {
    const Tensor& wi = g.constants.at(p[i].w);
    if (p[i].x != p[0].x || wi.dtype() != w0.dtype() || wi.shape()[0] != w0.shape()[0] ||
        p[i].bias.empty() != p[0].bias.empty() || p[i].head_size != p[0].head_size ||
        p[i].lin_shape->size() != p[0].lin_shape->size())
      return false;
    for (size_t j = 0; j + 1 < p[0].lin_shape->size(); ++j)
      if (!same_dim((*p[i].lin_shape)[j], (*p[0].lin_shape)[j])) return false;
  }
  return true;
}

// Row-major [rows, n_i] tensors (1-D: one row) side by side: [rows, sum n_i]. Any element size.
Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  const Tensor& t0 = *parts[0];
  const bool vec = t0.rank() == 1;
  const int64_t rows = vec ? 1 : t0.shape()[0];
  int64_t cols = 0;
  for (const Tensor* t : parts) cols += vec ? t->shape()[0] : t->shape()[1];
  Tensor out = Tensor::empty(t0.dtype(), vec ? Shape{cols} : Shape{rows, cols});
  const size_t es = dtype_size(t0.dtype());
  unsigned char* dst = static_cast<unsigned char*>(out.raw());
  for (int64_t i = 0; i < rows; ++i)
    for (const Tensor* t : parts) {
      const int64_t n = vec ? t->shape()[0] : t->shape()[1];
      std::memcpy(dst, static_cast<const unsigned char*>(t->raw()) + i * n * es, static_cast<size_t>(n) * es);
      dst += n * es;
    }
  return out;
}

ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

}  // namespace

size_t pack_qkv_projections(ir::Graph& graph) {
  if (!fusion_enabled("qkv-pack")) return 0;
  struct Plan {
    std::string attention;
    Projection p[3];
  };
  std::vector<Plan> plans;
  {
    const GraphIndex ix(graph);
    for (const ir::Node& n : graph.nodes) {
      Plan plan;
      if (match(graph, ix, n, plan.p)) {
        plan.attention = n.name;
        plans.push_back(std::move(plan));
      }
    }
  }
  for (const Plan& plan : plans) {
    const Projection* p = plan.p;
    const std::string base = plan.attention + "/qkv";
    graph.constants[base + "_w"] =
        concat_columns({&graph.constants.at(p[0].w), &graph.constants.at(p[1].w), &graph.constants.at(p[2].w)});
    const bool bias = !p[0].bias.empty();
    const std::string proj = base + "_projection";
    graph.nodes.push_back(make_node(base + "_matmul", "MatMul", {p[0].x, base + "_w"}, bias ? base + "_linear" : proj));
    if (bias) {
      graph.constants[base + "_b"] = concat_columns(
          {&graph.constants.at(p[0].bias), &graph.constants.at(p[1].bias), &graph.constants.at(p[2].bias)});
      graph.nodes.push_back(make_node(base + "_bias", "Add", {base + "_linear", base + "_b"}, proj));
    }
    // [L..., Hq + Hk + Hv, D]: the leading dims copied (0), the heads of q, k and v one after another.
    const size_t r = p[0].lin_shape->size();
    std::vector<int64_t> shape(r - 1, 0);
    shape.push_back(p[0].heads + p[1].heads + p[2].heads);
    shape.push_back(p[0].head_size);
    graph.constants[base + "_shape"] = Tensor::from_vector(shape, DType::kInt64, {static_cast<int64_t>(shape.size())});
    graph.nodes.push_back(make_node(base + "_heads", "Reshape", {proj, base + "_shape"}, base + "_heads"));
    for (ir::Node& n : graph.nodes) {
      if (n.name != plan.attention) continue;
      const int64_t axis = static_cast<int64_t>(r) - 1;
      n.attrs["q_part"] = ints_attr({axis, 0, p[0].heads});
      n.attrs["k_part"] = ints_attr({axis, p[0].heads, p[1].heads});
      n.attrs["v_part"] = ints_attr({axis, p[0].heads + p[1].heads, p[2].heads});
      for (int i = 0; i < 3; ++i) n.inputs[i] = base + "_heads";
    }
  }
  if (plans.empty()) return 0;
  graph.topo_sort();
  KILNRT_LOG(kDebug, "packed the Q / K / V projections of " << plans.size() << " attention node(s)");
  return plans.size();
}

}  // namespace kilnrt::passes
