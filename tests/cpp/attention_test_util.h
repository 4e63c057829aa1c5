// Graph builders shared by the attention / GELU fusion tests (CPU: test_attention_fusion.cc, GPU:
// test_cuda_attention.cc): exporter-shaped attention blocks and GELU chains on typed graph inputs; FusedAttention on
// one packed Q | K | V input (test_cuda_qkv_packing.cc, src/ops/nn/fused_attention/cuda/cudnn_attention_test.cc).
#pragma once
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"
#include "passes/shape_inference.h"
#include "pass_test_util.h"

namespace kilnrt::attntest {

using passtest::add_float32_input;
using passtest::count_ops;
using passtest::max_rel_diff;
using passtest::random_tensor;
using passtest::run_cpu;

inline Tensor scalar(float v) { return Tensor::from_vector(std::vector<float>{v}, DType::kFloat32, {}); }

// Graph `graph_name` with one FusedAttention(p, p, p [, mask]) node `node_name`, output y, scale 1 / sqrt(D),
// reading Q, K, V as parts [0, H), [H, 2H), [2H, 3H) of the graph input p along axis 2: BERT's p [B, S, 3H, D]
// through perms (0, 2, 1, 3), or (vit) torchvision MHA's p [S, B, 3H, D] through (1, 2, 0, 3), out_perm
// (2, 0, 1, 3); mask: an additive [B, 1, 1, S] graph input. Shapes not inferred yet: the caller adds attributes to
// g.nodes[0] first.
inline ir::Graph packed_attention_graph(const std::string& graph_name, const std::string& node_name, int64_t B,
                                        int64_t S, int64_t H, int64_t D, bool vit, bool mask) {
  ir::Graph g;
  g.name = graph_name;
  g.opsets[""] = 17;
  g.opsets["com.kilnrt"] = 1;
  add_float32_input(g, "p", vit ? Shape{S, B, 3 * H, D} : Shape{B, S, 3 * H, D});
  ir::Node n;
  n.name = node_name;
  n.op_type = "FusedAttention";
  n.domain = "com.kilnrt";
  n.inputs = {"p", "p", "p"};
  if (mask) {
    add_float32_input(g, "mask", {B, 1, 1, S});
    n.inputs.push_back("mask");
  }
  n.outputs = {"y"};
  n.attrs["scale"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["scale"].f = static_cast<float>(1.0 / std::sqrt(double(D)));
  // Logical [B, H, S, D]: BERT's physical [B, S, H, D] through (0, 2, 1, 3), ViT's [S, B, H, D] through (1, 2, 0, 3).
  const std::vector<int64_t> in_perm = vit ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{0, 2, 1, 3};
  const std::vector<int64_t> out_perm = vit ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{0, 2, 1, 3};
  const char* perms[4] = {"q_perm", "k_perm", "v_perm", "out_perm"};
  for (int i = 0; i < 4; ++i) {
    n.attrs[perms[i]].kind = ir::Attribute::Kind::kInts;
    n.attrs[perms[i]].ints = i < 3 ? in_perm : out_perm;
  }
  const char* parts[3] = {"q_part", "k_part", "v_part"};
  for (int i = 0; i < 3; ++i) {
    n.attrs[parts[i]].kind = ir::Attribute::Kind::kInts;
    n.attrs[parts[i]].ints = {2, i * H, H};
  }
  g.nodes.push_back(std::move(n));
  g.outputs = {"y"};
  return g;
}

struct Builder {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 7;
  explicit Builder(int64_t opset = 17) {
    g.name = "attention_test";
    g.opsets[""] = opset;
  }
  // A graph input with random contents in [lo, hi] (fed by run()).
  std::string input(const std::string& name, const Shape& s, float lo = -1.f, float hi = 1.f) {
    add_float32_input(g, name, s);
    feeds[name] = random_tensor(s, seed++, lo, hi);
    return name;
  }
  std::string constant(const std::string& name, Tensor t) {
    g.constants[name] = std::move(t);
    return name;
  }
  ir::Node& node(const std::string& op, std::vector<std::string> in, const std::string& out) {
    ir::Node n;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
  std::string transpose(const std::string& x, std::vector<int64_t> perm, const std::string& out) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = std::move(perm);
    node("Transpose", {x}, out).attrs["perm"] = a;
    return out;
  }
  std::string scal(const std::string& op, const std::string& x, float c, const std::string& out) {
    node(op, {x, constant(out + "_c", scalar(c))}, out);
    return out;
  }
  std::string softmax(const std::string& x, const std::string& out, int64_t axis = -1) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = axis;
    node("Softmax", {x}, out).attrs["axis"] = a;
    return out;
  }
  void output(const std::string& name) { g.outputs.push_back(name); }
  ir::Graph finish() {
    passes::infer_shapes(g);
    return g;
  }
};

// The BERT-style block of torch's TorchScript exporter: heads as [B, S, H, D] inputs, Q / V transposed to
// [B, H, S, D], K to [B, H, D, S], scores / sqrt(D) + mask [B, 1, 1, S], softmax, P V, transposed back.
inline ir::Graph bert_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D, bool mask, float mask_lo = -1.f,
                            float mask_hi = 0.f) {
  b.input("q", {B, S, H, D});
  b.input("k", {B, S, H, D});
  b.input("v", {B, S, H, D});
  b.transpose("q", {0, 2, 1, 3}, "qt");
  b.transpose("k", {0, 2, 3, 1}, "kt");
  b.transpose("v", {0, 2, 1, 3}, "vt");
  b.node("MatMul", {"qt", "kt"}, "scores");
  b.scal("Div", "scores", std::sqrt(float(D)), "scaled");
  std::string x = "scaled";
  if (mask) {
    b.input("mask", {B, 1, 1, S}, mask_lo, mask_hi);
    b.node("Add", {"scaled", "mask"}, "masked");
    x = "masked";
  }
  b.softmax(x, "probs");
  b.node("MatMul", {"probs", "vt"}, "ctx");
  b.transpose("ctx", {0, 2, 1, 3}, "y");
  b.output("y");
  return b.finish();
}

}  // namespace kilnrt::attntest
