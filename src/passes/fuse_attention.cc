#include "passes/fuse_attention.h"

#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/op_registry.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"
#include "passes/batch_first_attention.h"
#include "passes/dead_code.h"
#include "passes/narrow_attention_mask.h"
#include "passes/pack_qkv_projection.h"
#include "passes/select_packed_qkv.h"
#include "passes/split_packed_projection.h"
#include "passes/shape_inference.h"

namespace kilnrt::passes {
namespace {

int rank_of(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = g.type_of(v);
  return t && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}

constexpr int64_t kMaxFusedHead = 128;  // kilnrt::cuda::kernels::kAttentionMaxHead

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// A Reshape whose output has its input's shape: every dim known or named, and equal.
bool identity_reshape(const ir::Graph& g, const ir::Node& r) {
  if (r.outputs.size() != 1) return false;
  const ir::TensorType* in = g.type_of(r.inputs[0]);
  const ir::TensorType* out = g.type_of(r.outputs[0]);
  if (!in || !out || !in->has_shape || !out->has_shape || in->shape.size() != out->shape.size()) return false;
  for (size_t i = 0; i < in->shape.size(); ++i) {
    const ir::Dim &a = in->shape[i], &b = out->shape[i];
    if (!a.known() && a.param.empty()) return false;
    if (!(a == b)) return false;
  }
  return true;
}

// Dims equal and each known or named (an unnamed unknown dim proves nothing).
bool same_dim(const ir::Dim& a, const ir::Dim& b) { return (a.known() || !a.param.empty()) && a == b; }

// Reshape(Transpose(Reshape(x), last two dims swapped)) where the Reshapes only merge / split the leading dims:
// dynamo's SDPA writes K^T of a [B, H, S, D] key this way ([B*H, S, D] -> [B*H, D, S] -> [B, H, D, S]). Returns x
// when `r2` is such a chain, so the caller can read it as x with its last two dims swapped; else "".
std::string swap_last_two_chain(const ir::Graph& g, const GraphIndex& ix, const ir::Node& r2) {
  if (r2.op_type != "Reshape" || r2.outputs.size() != 1) return "";
  const ir::Node* t = ix.producer(r2.inputs[0]);
  if (!t || !t->domain.empty() || t->op_type != "Transpose") return "";
  const ir::Node* r1 = ix.producer(t->inputs[0]);
  if (!r1 || !r1->domain.empty() || r1->op_type != "Reshape") return "";
  const ir::TensorType* xt = g.type_of(r1->inputs[0]);
  const ir::TensorType* mt = g.type_of(r1->outputs[0]);
  const ir::TensorType* ot = g.type_of(r2.outputs[0]);
  if (!xt || !mt || !ot || !xt->has_shape || !mt->has_shape || !ot->has_shape) return "";
  const size_t r = xt->shape.size(), rm = mt->shape.size();
  if (r < 2 || rm < 2 || ot->shape.size() != r) return "";
  const std::vector<int64_t> tp = t->attr_ints("perm", std::vector<int64_t>{});
  if (tp.size() != rm) return "";
  for (size_t i = 0; i < rm; ++i) {
    const size_t want = i + 2 == rm ? rm - 1 : i + 1 == rm ? rm - 2 : i;
    if (tp[i] != static_cast<int64_t>(want)) return "";
  }
  const auto& xs = xt->shape;
  const auto& ms = mt->shape;
  const auto& os = ot->shape;
  if (!same_dim(ms[rm - 2], xs[r - 2]) || !same_dim(ms[rm - 1], xs[r - 1])) return "";  // r1 keeps [S, D]
  if (!same_dim(os[r - 2], xs[r - 1]) || !same_dim(os[r - 1], xs[r - 2])) return "";    // r2 gives [D, S]
  for (size_t i = 0; i + 2 < r; ++i)
    if (!same_dim(os[i], xs[i])) return "";
  return r1->inputs[0];
}

// torch's MultiheadAttention head split (torchvision ViT through dynamo):
//   Reshape(Transpose(Reshape(x [S, B, H*D] -> [S, B*H, D]), (1, 0, 2)) -> [B, H, S, D]).
// When `r2` is such a chain, returns x and sets H, D: the value is transpose(Reshape(x, [S, B, H, D]), (1, 2, 0, 3)),
// a view of x (no copy). Else "".
std::string head_split_chain(const ir::Graph& g, const GraphIndex& ix, const ir::Node& r2, int64_t* heads,
                             int64_t* head_size) {
  if (!is_op(&r2, "Reshape") || r2.outputs.size() != 1) return "";
  const ir::Node* t = ix.producer(r2.inputs[0]);
  if (!is_op(t, "Transpose") || t->attr_ints("perm", std::vector<int64_t>{}) != std::vector<int64_t>{1, 0, 2})
    return "";
  const ir::Node* r1 = ix.producer(t->inputs[0]);
  if (!is_op(r1, "Reshape") || r1->outputs.size() != 1) return "";
  const ir::TensorType* xt = g.type_of(r1->inputs[0]);
  const ir::TensorType* mt = g.type_of(r1->outputs[0]);
  const ir::TensorType* ot = g.type_of(r2.outputs[0]);
  if (!xt || !mt || !ot || !xt->has_shape || !mt->has_shape || !ot->has_shape || xt->shape.size() != 3 ||
      mt->shape.size() != 3 || ot->shape.size() != 4)
    return "";
  const auto& xs = xt->shape;  // [S, B, E]
  const auto& ms = mt->shape;  // [S, B*H, D]
  const auto& os = ot->shape;  // [B, H, S, D]
  if (!os[1].known() || !os[3].known() || !xs[2].known() || !ms[2].known()) return "";
  const int64_t h = os[1].value, d = os[3].value;
  if (h <= 0 || d <= 0 || ms[2].value != d || xs[2].value != h * d) return "";
  if (!same_dim(ms[0], xs[0]) || !same_dim(os[2], xs[0]) || !same_dim(os[0], xs[1])) return "";
  *heads = h;
  *head_size = d;
  return r1->inputs[0];
}

// An operand traced back through Transposes (and scalar Mul / Div when allowed) to its source: the operand equals
// transpose(src, perm) * scale. When split_from is set, src is a new value Reshape(split_from, [0, 0, heads,
// head_size]) that the fusion adds (a view).
struct Operand {
  std::string src;
  std::vector<int64_t> perm;
  double scale = 1.0;
  std::string split_from;
  int64_t heads = 0, head_size = 0;
};

Operand strip(const ir::Graph& g, const GraphIndex& ix, const std::string& value, int rank, bool allow_scale) {
  Operand op{value, {}, 1.0, "", 0, 0};
  for (int i = 0; i < rank; ++i) op.perm.push_back(i);
  for (;;) {
    const ir::Node* p = ix.producer(op.src);
    if (p && rank == 4) {
      int64_t heads = 0, head_size = 0;
      const std::string x = head_split_chain(g, ix, *p, &heads, &head_size);
      if (!x.empty()) {  // value = transpose(x as [S, B, H, D], (1, 2, 0, 3))
        static const int64_t kSplit[4] = {1, 2, 0, 3};
        for (int64_t& q : op.perm) q = kSplit[q];
        op.split_from = x;
        op.heads = heads;
        op.head_size = head_size;
        op.src = p->outputs[0] + "/heads";
        break;
      }
    }
    if (p && p->domain.empty() && rank >= 2) {
      const std::string x = swap_last_two_chain(g, ix, *p);
      if (!x.empty()) {  // value = x with its last two dims swapped
        for (int64_t& q : op.perm) q = q == rank - 1 ? rank - 2 : q == rank - 2 ? rank - 1 : q;
        op.src = x;
        continue;
      }
    }
    if (!p || !p->domain.empty() || p->inputs.empty() || rank_of(g, p->inputs[0]) != rank) break;
    if (p->op_type == "Transpose") {
      std::vector<int64_t> tp = p->attr_ints("perm", std::vector<int64_t>{});
      if (tp.empty())
        for (int i = rank - 1; i >= 0; --i) tp.push_back(i);
      if (static_cast<int>(tp.size()) != rank) break;
      std::vector<int64_t> np(rank);
      for (int i = 0; i < rank; ++i) np[i] = tp[op.perm[i]];  // L[i] = value[perm[i]] = src[tp[perm[i]]]
      op.perm = np;
      op.src = p->inputs[0];
      continue;
    }
    if (p->op_type == "Reshape" && identity_reshape(g, *p)) {  // dynamo's Reshape(x, Shape(x)-derived shape)
      op.src = p->inputs[0];
      continue;
    }
    double c = 0;
    int other = 0;
    if (allow_scale && (p->op_type == "Mul" || p->op_type == "Div") && binary_with_scalar(g, *p, &c, &other) &&
        rank_of(g, p->inputs[other]) == rank && (p->op_type == "Mul" || other == 0) && c != 0.0) {
      op.scale = p->op_type == "Mul" ? op.scale * c : op.scale / c;
      op.src = p->inputs[other];
      continue;
    }
    break;
  }
  return op;
}

bool identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

ir::Attribute ints_attr(const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = v;
  return a;
}

struct Match {
  ir::Node fused;
  std::vector<std::string> erase;
  std::vector<ir::Node> views;                         // head-split Reshapes the fused node reads (Operand::split_from)
  std::vector<std::pair<std::string, Tensor>> shapes;  // their shape constants
};

// dynamo's SDPA guard after the Softmax: Where(IsNaN(p), 0, p) (a row masked everywhere with -inf is NaN, the guard
// makes it 0). Returns the Where when `p` has exactly these two readers, adding both nodes to `names`.
const ir::Node* nan_guard(const ir::Graph& g, const GraphIndex& ix, const std::string& p,
                          std::vector<std::string>* names) {
  if (ix.uses(p) != 2) return nullptr;
  const ir::Node *isnan = nullptr, *where = nullptr;
  for (const ir::Node& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (in == p) {
        if (is_op(&n, "IsNaN") && !isnan)
          isnan = &n;
        else if (is_op(&n, "Where") && !where)
          where = &n;
        else
          return nullptr;
        break;
      }
  }
  if (!isnan || !where || isnan->outputs.size() != 1 || where->inputs.size() != 3 || where->outputs.size() != 1)
    return nullptr;
  if (ix.sole_consumer(isnan->outputs[0]) != where || where->inputs[0] != isnan->outputs[0] || where->inputs[2] != p)
    return nullptr;
  const std::optional<double> zero = scalar_constant(g, where->inputs[1]);
  if (!zero || *zero != 0.0 || rank_of(g, where->outputs[0]) != rank_of(g, p)) return nullptr;
  names->push_back(isnan->name);
  names->push_back(where->name);
  return where;
}

// Tries to fuse around Softmax node `s`; fills `m` on success.
bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& s, Match* m) {
  if (!is_op(&s, "Softmax") || s.inputs.size() != 1 || s.outputs.size() != 1) return false;
  const std::string& x = s.inputs[0];
  const int r = rank_of(g, x);
  if (r < 2 || r > 4) return false;
  const ir::TensorType* xt = g.type_of(x);
  if (!is_float(xt->dtype)) return false;
  const int64_t opset = g.opset("");
  int64_t axis = s.attr_int("axis", opset >= 13 ? -1 : 1);
  if (axis < 0) axis += r;
  if (axis != r - 1) return false;
  std::vector<std::string> erase = {s.name};
  std::string probs = s.outputs[0];
  bool zero_masked_rows = false;
  const ir::Node* m2 = ix.sole_consumer(probs);
  if (!m2) {
    if (const ir::Node* guard = nan_guard(g, ix, probs, &erase)) {
      probs = guard->outputs[0];
      m2 = ix.sole_consumer(probs);
      zero_masked_rows = true;
    }
  }
  if (!is_op(m2, "MatMul") || m2->inputs[0] != probs || rank_of(g, m2->inputs[1]) != r) return false;
  if (ix.uses(x) != 1) return false;
  erase.push_back(m2->name);
  // Scores side: [Add(scores, mask)] <- [Mul/Div scalar] <- MatMul.
  std::string mask;
  auto trace_scores = [&](const std::string& v, double* post, std::vector<std::string>* names) -> const ir::Node* {
    const ir::Node* p = ix.producer(v);
    double c = 0;
    int other = 0;
    std::string cur = v;
    if (p && (is_op(p, "Mul") || is_op(p, "Div")) && binary_with_scalar(g, *p, &c, &other) &&
        (p->op_type == "Mul" || other == 0) && c != 0.0 && ix.uses(cur) == 1 && rank_of(g, p->inputs[other]) == r) {
      *post = p->op_type == "Mul" ? c : 1.0 / c;
      names->push_back(p->name);
      cur = p->inputs[other];
      p = ix.producer(cur);
    }
    if (!is_op(p, "MatMul") || ix.uses(cur) != 1) return nullptr;
    names->push_back(p->name);
    return p;
  };
  double post = 1.0;
  const ir::Node* m1 = nullptr;
  std::vector<std::string> chain;
  const ir::Node* add = ix.producer(x);
  if (is_op(add, "Add") && add->inputs.size() == 2) {
    for (int i = 0; i < 2 && !m1; ++i) {
      chain.clear();
      post = 1.0;
      if (rank_of(g, add->inputs[i]) != r) continue;
      m1 = trace_scores(add->inputs[i], &post, &chain);
      if (m1) mask = add->inputs[1 - i];
    }
    if (!m1) return false;
    chain.push_back(add->name);
    const ir::TensorType* mt = g.type_of(mask);
    const ir::TensorType* st = g.type_of(m1->outputs[0]);
    if (!mt || mt->dtype != xt->dtype) return false;
    // The mask must not broadcast the scores to a larger shape: each of its dims is 1 or the scores' dim, or (mask
    // shape unknown, e.g. computed by GatherND) the Add's output has the scores' shape.
    bool fits = mt->has_shape && st && st->has_shape && static_cast<int>(mt->shape.size()) <= r;
    for (size_t i = 0; fits && i < mt->shape.size(); ++i) {
      const ir::Dim& md = mt->shape[i];
      const ir::Dim& sd = st->shape[r - mt->shape.size() + i];
      fits = (md.known() && md.value == 1) || md == sd;
    }
    if (!fits) {
      const ir::TensorType* at = g.type_of(x);
      fits = st && st->has_shape && at && at->has_shape && at->shape.size() == st->shape.size();
      for (size_t i = 0; fits && i < st->shape.size(); ++i) fits = same_dim(at->shape[i], st->shape[i]);
    }
    if (!fits) return false;
  } else {
    m1 = trace_scores(x, &post, &chain);
    if (!m1) return false;
  }
  erase.insert(erase.end(), chain.begin(), chain.end());
  if (rank_of(g, m1->inputs[0]) != r || rank_of(g, m1->inputs[1]) != r) return false;
  const Operand q = strip(g, ix, m1->inputs[0], r, true);
  Operand k = strip(g, ix, m1->inputs[1], r, true);
  std::swap(k.perm[r - 1], k.perm[r - 2]);  // K^T -> K
  const Operand v = strip(g, ix, m2->inputs[1], r, false);
  for (const Operand* o : {&q, static_cast<const Operand*>(&k), &v}) {
    const ir::TensorType* ot = g.type_of(o->split_from.empty() ? o->src : o->split_from);
    if (!ot || !is_float(ot->dtype) || ot->dtype != xt->dtype) return false;
  }
  // Head sizes above what the CUDA kernel takes stay unfused (the plain MatMul / Softmax path handles any size).
  const ir::TensorType* qt = g.type_of(m1->inputs[0]);
  const ir::TensorType* vt = g.type_of(m2->inputs[1]);
  if ((qt->shape.back().known() && qt->shape.back().value > kMaxFusedHead) ||
      (vt->shape.back().known() && vt->shape.back().value > kMaxFusedHead))
    return false;
  std::string out = m2->outputs[0];
  std::vector<int64_t> out_perm;
  const ir::Node* t = ix.sole_consumer(out);
  if (is_op(t, "Transpose") && t->outputs.size() == 1) {
    std::vector<int64_t> tp = t->attr_ints("perm", std::vector<int64_t>{});
    if (tp.empty())
      for (int i = r - 1; i >= 0; --i) tp.push_back(i);
    if (static_cast<int>(tp.size()) == r) {
      out_perm = tp;
      out = t->outputs[0];
      erase.push_back(t->name);
    }
  }
  ir::Node& f = m->fused;
  f.name = s.name + "/fused_attention";
  f.op_type = "FusedAttention";
  f.domain = ops::nn::kKilnrtDomain;
  f.inputs = {q.src, k.src, v.src};
  if (!mask.empty()) f.inputs.push_back(mask);
  f.outputs = {out};
  ir::Attribute sc;
  sc.kind = ir::Attribute::Kind::kFloat;
  sc.f = static_cast<float>(q.scale * k.scale * post);
  f.attrs["scale"] = sc;
  if (!identity(q.perm)) f.attrs["q_perm"] = ints_attr(q.perm);
  if (!identity(k.perm)) f.attrs["k_perm"] = ints_attr(k.perm);
  if (!identity(v.perm)) f.attrs["v_perm"] = ints_attr(v.perm);
  if (!out_perm.empty() && !identity(out_perm)) f.attrs["out_perm"] = ints_attr(out_perm);
  if (zero_masked_rows) {
    ir::Attribute z;
    z.kind = ir::Attribute::Kind::kInt;
    z.i = 1;
    f.attrs["zero_masked_rows"] = z;
  }
  for (const Operand* o : {&q, static_cast<const Operand*>(&k), &v}) {
    if (o->split_from.empty() || (o != &q && o->src == q.src) || (o == &v && v.src == k.src)) continue;
    const std::string shape = o->src + "_shape";
    m->shapes.emplace_back(shape,
                           Tensor::from_vector(std::vector<int64_t>{0, 0, o->heads, o->head_size}, DType::kInt64, {4}));
    ir::Node r;
    r.name = o->src;
    r.op_type = "Reshape";
    r.inputs = {o->split_from, shape};
    r.outputs = {o->src};
    m->views.push_back(std::move(r));
  }
  m->erase = std::move(erase);
  return true;
}

}  // namespace

size_t fuse_attention(ir::Graph& graph) {
  if (!fusion_enabled("attention")) return 0;
  // MultiheadAttention's packed q / k / v selects first: Slice of the projection instead of Transpose + Gather.
  if (select_packed_qkv(graph) > 0) {
    eliminate_dead_code(graph);  // the replaced Transpose chain still reads the projection
    infer_shapes(graph);
  }
  // Then each selected part from a GEMM of its own (no strided copies of the packed projection); after fusing,
  // pack_qkv_projections makes them one GEMM again, read by the attention in place.
  if (split_packed_projection(graph) > 0) infer_shapes(graph);
  // One match at a time: a match erases values a later match's operands might have been traced through.
  size_t fused = 0;
  for (bool found = true; found;) {
    found = false;
    Match m;
    {
      const GraphIndex ix(graph);
      for (const ir::Node& n : graph.nodes)
        if (match(graph, ix, n, &m)) {
          found = true;
          break;
        }
    }
    if (!found) break;
    KILNRT_LOG(kDebug, "fused attention " << m.fused.name << " (" << m.erase.size() << " nodes)");
    erase_nodes(graph, m.erase);
    for (auto& [name, t] : m.shapes) graph.constants[name] = std::move(t);
    for (ir::Node& n : m.views) graph.nodes.push_back(std::move(n));
    graph.nodes.push_back(std::move(m.fused));
    use_kilnrt_domain(graph);
    graph.topo_sort();
    ++fused;
  }
  // torch's batch_first MultiheadAttention: its two [B, S, E] <-> [S, B, E] transposes per layer, read in place.
  if (fused > 0) {
    narrow_attention_masks(graph);  // BERT's query-broadcast key mask read as a key mask (narrow_attention_mask.h)
    eliminate_dead_code(graph);
    infer_shapes(graph);
    if (drop_batch_first_transposes(graph) > 0) infer_shapes(graph);
  }
  // Q, K and V projected from one input: one GEMM, its output read three times in place (q_part / k_part / v_part).
  if (pack_qkv_projections(graph) > 0) {
    eliminate_dead_code(graph);
    infer_shapes(graph);
  }
  return fused;
}

}  // namespace kilnrt::passes
