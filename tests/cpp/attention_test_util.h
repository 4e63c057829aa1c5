// Graph builders shared by the attention / GELU fusion tests (CPU: test_attention_fusion.cc, GPU:
// test_cuda_attention.cc): exporter-shaped attention blocks and GELU chains on typed graph inputs.
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

using passtest::count_ops;
using passtest::max_rel_diff;
using passtest::random_tensor;
using passtest::run_cpu;

inline Tensor scalar(float v) { return Tensor::from_vector(std::vector<float>{v}, DType::kFloat32, {}); }

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
    g.inputs.push_back(name);
    ir::TensorType t;
    t.dtype = DType::kFloat32;
    t.has_shape = true;
    t.shape = ir::shape_to_sym(s);
    g.types[name] = t;
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
