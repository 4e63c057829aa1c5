// Small graph builders for the conv fusion tests (CPU and CUDA): Conv / ConvTranspose / BatchNormalization and
// activation chains on random constants, plus a CPU runner for before/after comparisons.
#pragma once
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"
#include "onnx_test_writer.h"
#include "passes/shape_inference.h"
#include "pass_test_util.h"

namespace kilnrt::testing_conv {

using passtest::count_ops;
using passtest::max_rel_diff;
using passtest::random_feeds;
using passtest::random_tensor;
using passtest::run_cpu;

inline ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute float_attr(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute string_attr(const std::string& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = v;
  return a;
}

// Adds random float32 initializers to an ONNX test model's graph (onnx_test_writer.h): add(name, dims, lo, hi) draws
// random_tensor(dims, seed, lo, hi), the seed counting up from the first one.
struct RandomInitializers {
  onnx_test::GraphSpec& g;
  uint32_t seed;
  void operator()(const std::string& name, std::vector<int64_t> dims, float lo, float hi) {
    const Tensor t = random_tensor(dims, seed++, lo, hi);
    g.initializers.push_back(
        onnx_test::TensorSpec::float_raw(name, dims, std::vector<float>(t.data<float>(), t.data<float>() + t.numel())));
  }
};

// A graph under construction: typed inputs, constants, nodes appended in order.
struct GraphBuilder {
  ir::Graph g;
  uint32_t seed = 1;
  explicit GraphBuilder(int64_t opset = 17) {
    g.name = "conv_fusion_test";
    g.opsets[""] = opset;
  }
  void input(const std::string& name, const Shape& shape) { passtest::add_float32_input(g, name, shape); }
  std::string constant(const std::string& name, Tensor t) {
    g.constants[name] = std::move(t);
    return name;
  }
  std::string random_constant(const std::string& name, const Shape& shape, float lo = -1.f, float hi = 1.f) {
    return constant(name, random_tensor(shape, seed++, lo, hi));
  }
  ir::Node& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
    ir::Node n;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
  // Conv of `x` (C channels) to m channels, k x k kernel, pad k/2, given group, optional bias.
  ir::Node& conv(const std::string& x, const std::string& y, int64_t c, int64_t m, int64_t k, int64_t group, bool bias,
                 int64_t stride = 1) {
    const std::string w = random_constant(y + "_W", {m, c / group, k, k}, -0.5f, 0.5f);
    std::vector<std::string> ins = {x, w};
    if (bias) ins.push_back(random_constant(y + "_B", {m}));
    ir::Node& n = node("Conv", ins, {y});
    n.attrs["group"] = int_attr(group);
    n.attrs["pads"] = ints_attr({k / 2, k / 2, k / 2, k / 2});
    n.attrs["strides"] = ints_attr({stride, stride});
    n.attrs["kernel_shape"] = ints_attr({k, k});
    return n;
  }
  // Inference BatchNormalization with random parameters (var in [0.5, 2]) unless given.
  ir::Node& batchnorm(const std::string& x, const std::string& y, int64_t m, float eps = 1e-5f) {
    const std::string s = random_constant(y + "_scale", {m}, 0.5f, 1.5f);
    const std::string b = random_constant(y + "_bias", {m});
    const std::string mean = random_constant(y + "_mean", {m}, -0.5f, 0.5f);
    const std::string var = random_constant(y + "_var", {m}, 0.5f, 2.f);
    ir::Node& n = node("BatchNormalization", {x, s, b, mean, var}, {y});
    n.attrs["epsilon"] = float_attr(eps);
    return n;
  }
  void output(const std::string& name) { g.outputs.push_back(name); }
  ir::Graph finish() {
    passes::infer_shapes(g);
    return g;
  }
};

// The end of an efficientnet-style block built in b: "pr" = 1x1 conv (with bias) of `se` from e to c channels, then
// "y" = pr + x (the block input) when stride is 1; that value is the graph's output. Returns the finished graph.
inline ir::Graph finish_block(GraphBuilder& b, const std::string& se, int64_t e, int64_t c, int64_t stride) {
  b.conv(se, "pr", e, c, 1, 1, true);
  if (stride == 1) {
    b.node("Add", {"pr", "x"}, {"y"});
    b.output("y");
  } else {
    b.output("pr");
  }
  return b.finish();
}

}  // namespace kilnrt::testing_conv
