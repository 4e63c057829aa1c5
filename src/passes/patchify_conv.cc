#include "passes/patchify_conv.h"

#include <cstring>

#include "core/logging.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

struct Match {
  std::string conv, reshape, transpose;  // node names
  std::string x, w, bias, out;           // values
  int64_t c = 0, hp = 0, wp = 0, kh = 0, kw = 0, o = 0;
};

// The Conv's geometry when it is a patch embedding read only as [N, L, O] tokens.
bool match_at(const ir::Graph& g, const GraphIndex& ix, const ir::Node& conv, Match* m) {
  if (!is_op(&conv, "Conv") || conv.inputs.size() < 2 || conv.outputs.size() != 1) return false;
  const std::string& x = conv.inputs[0];
  const std::string& w = conv.inputs[1];
  const std::string bias = conv.inputs.size() > 2 ? conv.inputs[2] : "";
  if (!g.is_constant(w) || (!bias.empty() && !g.is_constant(bias))) return false;
  const Tensor& wt = g.constants.at(w);
  const ir::TensorType* xt = g.type_of(x);
  const ir::SymShape* xs = shape_of(g, x);
  if (!xt || !xs || xs->size() != 4 || wt.shape().size() != 4 || xt->dtype != wt.dtype()) return false;
  if (wt.dtype() != DType::kFloat32 && wt.dtype() != DType::kFloat16 && wt.dtype() != DType::kBFloat16) return false;
  const int64_t o = wt.shape()[0], c = wt.shape()[1], kh = wt.shape()[2], kw = wt.shape()[3];
  if (!(*xs)[1].known() || !(*xs)[2].known() || !(*xs)[3].known() || (*xs)[1].value != c) return false;
  const int64_t h = (*xs)[2].value, wd = (*xs)[3].value;
  if (kh <= 0 || kw <= 0 || h % kh != 0 || wd % kw != 0) return false;
  if (conv.attr_int("group", 1) != 1) return false;
  const std::string pad = conv.attr_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") return false;
  if (conv.attr_ints("kernel_shape", std::vector<int64_t>{kh, kw}) != std::vector<int64_t>{kh, kw}) return false;
  if (conv.attr_ints("strides", std::vector<int64_t>{1, 1}) != std::vector<int64_t>{kh, kw}) return false;
  if (!all_equal(conv.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0}), 0)) return false;
  if (!all_equal(conv.attr_ints("dilations", std::vector<int64_t>{1, 1}), 1)) return false;
  if (!bias.empty()) {
    const Tensor& bt = g.constants.at(bias);
    if (bt.numel() != o || bt.dtype() != wt.dtype()) return false;
  }
  const int64_t hp = h / kh, wp = wd / kw, l = hp * wp;
  // Y -> Reshape [N, O, L] -> Transpose (0, 2, 1), each the only reader.
  const ir::Node* r = ix.sole_consumer(conv.outputs[0]);
  if (!is_op(r, "Reshape") || r->inputs[0] != conv.outputs[0] || r->outputs.size() != 1) return false;
  const ir::SymShape* rs = shape_of(g, r->outputs[0]);
  // Same element count as Y = [N, O, Hp, Wp], so dim 0 is N.
  if (!rs || rs->size() != 3 || (*rs)[1] != ir::Dim(o) || (*rs)[2] != ir::Dim(l)) return false;
  const ir::Node* t = ix.sole_consumer(r->outputs[0]);
  if (!is_op(t, "Transpose") || t->outputs.size() != 1 ||
      t->attr_ints("perm", std::vector<int64_t>{}) != std::vector<int64_t>{0, 2, 1})
    return false;
  m->conv = conv.name;
  m->reshape = r->name;
  m->transpose = t->name;
  m->x = x;
  m->w = w;
  m->bias = bias;
  m->out = t->outputs[0];
  m->c = c;
  m->hp = hp;
  m->wp = wp;
  m->kh = kh;
  m->kw = kw;
  m->o = o;
  return true;
}

Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from_vector(v, DType::kInt64, {static_cast<int64_t>(v.size())});
}

// W [O, K] (row-major, any element size) -> W^T [K, O].
Tensor transposed_weight(const Tensor& w, int64_t o, int64_t k) {
  Tensor t = Tensor::empty(w.dtype(), {k, o});
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const unsigned char*>(w.raw());
  auto* dst = static_cast<unsigned char*>(t.raw());
  for (int64_t i = 0; i < o; ++i)
    for (int64_t j = 0; j < k; ++j) std::memcpy(dst + (j * o + i) * es, src + (i * k + j) * es, es);
  return t;
}

}  // namespace

size_t patchify_conv(ir::Graph& graph) {
  if (!fusion_enabled("patchify")) return 0;
  std::vector<Match> matches;
  {
    const GraphIndex ix(graph);
    for (const ir::Node& n : graph.nodes) {
      Match m;
      if (match_at(graph, ix, n, &m)) matches.push_back(std::move(m));
    }
  }
  if (matches.empty()) return 0;
  std::vector<std::string> erase;
  for (const Match& m : matches) {
    erase.insert(erase.end(), {m.conv, m.reshape, m.transpose});
    const std::string p = m.conv + "/patchify";
    const int64_t k = m.c * m.kh * m.kw, l = m.hp * m.wp;
    graph.constants[p + "/patches_shape"] = ints({0, m.c, m.hp, m.kh, m.wp, m.kw});
    graph.constants[p + "/tokens_shape"] = ints({0, l, k});
    graph.constants[p + "/weight_t"] = transposed_weight(graph.constants.at(m.w), m.o, k);
    graph.nodes.push_back(make_node(p + "/patches", "Reshape", {m.x, p + "/patches_shape"}, p + "/patches"));
    ir::Node t = make_node(p + "/im2col", "Transpose", {p + "/patches"}, p + "/im2col");
    t.attrs["perm"].kind = ir::Attribute::Kind::kInts;
    t.attrs["perm"].ints = {0, 2, 4, 1, 3, 5};
    graph.nodes.push_back(std::move(t));
    graph.nodes.push_back(make_node(p + "/tokens", "Reshape", {p + "/im2col", p + "/tokens_shape"}, p + "/tokens"));
    const std::string mm_out = m.bias.empty() ? m.out : p + "/matmul";
    graph.nodes.push_back(make_node(p + "/matmul", "MatMul", {p + "/tokens", p + "/weight_t"}, mm_out));
    if (!m.bias.empty()) graph.nodes.push_back(make_node(p + "/bias", "Add", {mm_out, m.bias}, m.out));
  }
  erase_nodes(graph, erase);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "rewrote " << matches.size() << " patch-embedding convolution(s) as GEMMs");
  return matches.size();
}

}  // namespace kilnrt::passes
