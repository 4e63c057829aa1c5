#include "passes/fold_layer_scale.h"

#include <cmath>
#include <vector>

#include "core/logging.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"
#include "passes/value_uses.h"

namespace kilnrt::passes {
namespace {

const Tensor* float32_constant(const ir::Graph& g, const std::string& v) {
  auto it = g.constants.find(v);
  return it == g.constants.end() || it->second.dtype() != DType::kFloat32 ? nullptr : &it->second;
}

// Known or named (symbolic) dims that are equal.
bool same_shape(const ir::SymShape& a, const ir::SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i].known() || !a[i].param.empty()) || a[i] != b[i]) return false;
  return true;
}

// A constant that, padded with leading 1s to `rank`, has size 1 in every dim except possibly `axis`, where it has
// size n (or 1): a per-channel (or scalar) factor along `axis`.
bool along_axis(const Tensor& t, size_t rank, size_t axis, int64_t n) {
  const Shape& s = t.shape();
  if (s.size() > rank) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t d = rank - s.size() + i;
    if (s[i] != 1 && !(d == axis && s[i] == n)) return false;
  }
  return true;
}

// One chain, as indices into graph.nodes (-1: absent).
struct Chain {
  int matmul = -1, bias_add = -1, transpose = -1, mul = -1, add = -1;
  std::string bias, gamma, residual;
  std::vector<int64_t> perm;  // the Transpose's permutation (empty without one)
};

bool match(const ir::Graph& g, const GraphIndex& ix, size_t i, Chain* c) {
  const ir::Node& mm = g.nodes[i];
  if (!is_op(&mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) return false;
  const Tensor* w = float32_constant(g, mm.inputs[1]);
  const ir::TensorType* at = g.type_of(mm.inputs[0]);
  if (!w || w->rank() != 2 || !at || !at->has_shape || at->shape.size() < 2 || at->dtype != DType::kFloat32)
    return false;
  const size_t rank = at->shape.size();
  const int64_t n = w->shape()[1];
  auto index_of = [&](const ir::Node* node) { return static_cast<int>(node - g.nodes.data()); };
  c->matmul = static_cast<int>(i);
  std::string cur = mm.outputs[0];
  const ir::Node* next = ix.sole_consumer(cur);
  // Optional bias: Add(Y, b) with b [N] (or [1, ..., N]).
  if (is_op(next, "Add") && next->inputs.size() == 2 && next->outputs.size() == 1) {
    const std::string& other = next->inputs[0] == cur ? next->inputs[1] : next->inputs[0];
    const Tensor* b = float32_constant(g, other);
    if (b && b->numel() == n && along_axis(*b, rank, rank - 1, n)) {
      c->bias_add = index_of(next);
      c->bias = other;
      cur = next->outputs[0];
      next = ix.sole_consumer(cur);
    }
  }
  // Optional permutation; `axis` is where Y's last dim (the output channels) ends up.
  size_t axis = rank - 1;
  if (is_op(next, "Transpose") && next->outputs.size() == 1) {
    c->perm = next->attr_ints("perm", std::vector<int64_t>{});
    if (c->perm.size() != rank) return false;
    std::vector<int> seen(rank, 0);
    for (int64_t p : c->perm)
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]++) return false;
    for (size_t d = 0; d < rank; ++d)
      if (c->perm[d] == static_cast<int64_t>(rank) - 1) axis = d;
    c->transpose = index_of(next);
    cur = next->outputs[0];
    next = ix.sole_consumer(cur);
  }
  // The layer scale: Mul(., gamma), gamma per output channel.
  if (!is_op(next, "Mul") || next->inputs.size() != 2 || next->outputs.size() != 1) return false;
  c->gamma = next->inputs[0] == cur ? next->inputs[1] : next->inputs[0];
  const Tensor* gamma = float32_constant(g, c->gamma);
  if (!gamma || !along_axis(*gamma, rank, axis, n)) return false;
  for (int64_t k = 0; k < gamma->numel(); ++k)
    if (!std::isfinite(gamma->data<float>()[k])) return false;
  c->mul = index_of(next);
  cur = next->outputs[0];
  next = ix.sole_consumer(cur);
  // The skip connection: Add(., R), R a computed value of the scaled value's exact shape (no broadcast).
  if (!is_op(next, "Add") || next->inputs.size() != 2 || next->outputs.size() != 1 ||
      next->inputs[0] == next->inputs[1])
    return false;
  c->residual = next->inputs[0] == cur ? next->inputs[1] : next->inputs[0];
  if (g.is_constant(c->residual)) return false;
  const ir::TensorType* yt = g.type_of(cur);
  const ir::TensorType* rt = g.type_of(c->residual);
  const ir::TensorType* st = g.type_of(next->outputs[0]);
  if (!yt || !rt || !st || !yt->has_shape || !rt->has_shape || !st->has_shape || rt->dtype != DType::kFloat32 ||
      yt->shape.size() != rank || !same_shape(yt->shape, rt->shape) || !same_shape(yt->shape, st->shape))
    return false;
  c->add = index_of(next);
  return true;
}

// gamma's value for output channel j (a scalar gamma: its only value).
float gamma_at(const Tensor& gamma, int64_t j) { return gamma.data<float>()[gamma.numel() == 1 ? 0 : j]; }

void rewrite(ir::Graph& g, const Chain& c, std::vector<ir::Node>* added) {
  ir::Node& mm = g.nodes[c.matmul];
  const Tensor gamma = g.constants.at(c.gamma);
  const Tensor& w = g.constants.at(mm.inputs[1]);
  const int64_t k = w.shape()[0], n = w.shape()[1];
  Tensor w2 = Tensor::empty(DType::kFloat32, w.shape());
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < n; ++j)
      w2.data<float>()[r * n + j] =
          static_cast<float>(static_cast<double>(w.data<float>()[r * n + j]) * gamma_at(gamma, j));
  mm.inputs[1] = add_constant(g, mm.name + "/layer_scaled_W", std::move(w2));
  std::string y = mm.outputs[0];
  if (c.bias_add >= 0) {
    ir::Node& ba = g.nodes[c.bias_add];
    const Tensor& b = g.constants.at(c.bias);
    Tensor b2 = Tensor::empty(DType::kFloat32, b.shape());
    for (int64_t j = 0; j < n; ++j)
      b2.data<float>()[j] = static_cast<float>(static_cast<double>(b.data<float>()[j]) * gamma_at(gamma, j));
    const std::string b2_name = add_constant(g, ba.name + "/layer_scaled_B", std::move(b2));
    for (std::string& in : ba.inputs)
      if (in == c.bias) in = b2_name;
    y = ba.outputs[0];
  }
  ir::Node& add = g.nodes[c.add];
  g.types.erase(g.nodes[c.mul].outputs[0]);
  if (c.transpose < 0) {
    add.inputs = {y, c.residual};
    return;
  }
  // Y' + Transpose(R, P^-1), then the chain's permutation, writing the Add's old output. The new names come from
  // distinct bases (the Add's name / output), so names made for other chains before they exist cannot collide.
  ir::Node& tr = g.nodes[c.transpose];
  const size_t rank = c.perm.size();
  std::vector<int64_t> inverse(rank);
  for (size_t d = 0; d < rank; ++d) inverse[c.perm[d]] = static_cast<int64_t>(d);
  const std::string r = unique_value_name(g, c.residual + "/" + add.name + "/permuted");
  const std::string sum = unique_value_name(g, add.outputs[0] + "/unpermuted");
  ir::Node rt = make_node(add.name + "/permute_residual", "Transpose", {c.residual}, r);
  rt.attrs["perm"].kind = ir::Attribute::Kind::kInts;
  rt.attrs["perm"].ints = inverse;
  added->push_back(std::move(rt));
  g.types.erase(tr.outputs[0]);
  tr.inputs = {sum};
  tr.outputs = {add.outputs[0]};
  add.inputs = {y, r};
  add.outputs = {sum};
}

}  // namespace

size_t fold_layer_scale(ir::Graph& graph) {
  if (!fusion_enabled("layer-scale")) return 0;
  std::vector<Chain> chains;
  {
    const GraphIndex ix(graph);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      Chain c;
      if (match(graph, ix, i, &c)) chains.push_back(std::move(c));
    }
  }
  if (chains.empty()) return 0;
  std::vector<ir::Node> added;
  std::vector<std::string> erase;
  for (const Chain& c : chains) {
    erase.push_back(graph.nodes[c.mul].name);
    rewrite(graph, c, &added);
  }
  erase_nodes(graph, erase);
  for (ir::Node& n : added) graph.nodes.push_back(std::move(n));
  graph.topo_sort();  // the unscaled W / b / gamma stay until dead-code elimination prunes them
  KILNRT_LOG(kDebug, "folded " << chains.size() << " layer scale(s) into GEMM weights");
  return chains.size();
}

}  // namespace kilnrt::passes
