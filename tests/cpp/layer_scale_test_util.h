// ConvNeXt-style blocks for the fold_layer_scale tests (CPU: test_fold_layer_scale.cc, GPU:
// test_cuda_fold_layer_scale.cc), shaped like torch's export of torchvision's CNBlock:
//   x [N, C, H, W] -> depthwise 7x7 Conv -> Transpose(0,2,3,1) -> LayerNormalization -> MatMul [C, 4C] -> Add(b1)
//   -> GELU (erf form: Div, Erf, Add, Mul, Mul) -> MatMul [4C, C] -> Add(b2) -> Transpose(0,3,1,2)
//   -> Mul(gamma [C,1,1], .) -> Add(., x)
// `blocks` of them in a row, with variations that must (or must not) stop the rewrite.
#pragma once
#include <string>
#include <vector>

#include "conv_fusion_test_util.h"

namespace kilnrt::layerscaletest {

using testing_conv::GraphBuilder;
using testing_conv::ints_attr;

inline Tensor scalar(float v) { return Tensor::from_vector(std::vector<float>{v}, DType::kFloat32, {}); }

struct BlockCase {
  int64_t n = 2, c = 16, h = 6, w = 5;
  int blocks = 2;
  bool bias = true;   // the second Linear has a bias
  Shape gamma_shape;  // empty: [C, 1, 1]
  float gamma_lo = 0.25f, gamma_hi = 1.5f;
  bool residual_broadcast = false;       // the skip connection is a [1, C, H, W] graph input (broadcast over N)
  bool permuted_read_elsewhere = false;  // block 0's permuted Linear output is also a graph output
};

inline std::string block(GraphBuilder& b, const BlockCase& bc, const std::string& x, const std::string& residual,
                         int i) {
  const std::string p = "b" + std::to_string(i) + "_";
  const int64_t c = bc.c;
  b.conv(x, p + "dw", c, c, 7, c, true);
  b.node("Transpose", {p + "dw"}, {p + "nhwc"}).attrs["perm"] = ints_attr({0, 2, 3, 1});
  ir::Node& ln = b.node(
      "LayerNormalization",
      {p + "nhwc", b.random_constant(p + "ln_s", {c}, 0.5f, 1.5f), b.random_constant(p + "ln_b", {c})}, {p + "ln"});
  ln.attrs["axis"] = testing_conv::int_attr(-1);
  ln.attrs["epsilon"] = testing_conv::float_attr(1e-6f);
  // Weights ~ 1/sqrt(K) so that activations stay around 1.
  const float s1 = 1.7f / std::sqrt(float(c)), s2 = 1.7f / std::sqrt(float(4 * c));
  b.node("MatMul", {p + "ln", b.random_constant(p + "w1", {c, 4 * c}, -s1, s1)}, {p + "mm1"});
  b.node("Add", {b.random_constant(p + "b1", {4 * c}, -0.5f, 0.5f), p + "mm1"}, {p + "fc1"});
  b.node("Div", {p + "fc1", b.constant(p + "sqrt2", scalar(std::sqrt(2.f)))}, {p + "g0"});
  b.node("Erf", {p + "g0"}, {p + "g1"});
  b.node("Add", {p + "g1", b.constant(p + "one", scalar(1.f))}, {p + "g2"});
  b.node("Mul", {p + "fc1", p + "g2"}, {p + "g3"});
  b.node("Mul", {p + "g3", b.constant(p + "half", scalar(0.5f))}, {p + "gelu"});
  b.node("MatMul", {p + "gelu", b.random_constant(p + "w2", {4 * c, c}, -s2, s2)}, {p + "mm2"});
  std::string y = p + "mm2";
  if (bc.bias) {
    b.node("Add", {b.random_constant(p + "b2", {c}, -0.5f, 0.5f), y}, {p + "fc2"});
    y = p + "fc2";
  }
  b.node("Transpose", {y}, {p + "nchw"}).attrs["perm"] = ints_attr({0, 3, 1, 2});
  const Shape gs = bc.gamma_shape.empty() ? Shape{c, 1, 1} : bc.gamma_shape;
  b.node("Mul", {b.random_constant(p + "gamma", gs, bc.gamma_lo, bc.gamma_hi), p + "nchw"}, {p + "scaled"});
  b.node("Add", {p + "scaled", residual}, {p + "out"});
  if (bc.permuted_read_elsewhere && i == 0) b.output(p + "nchw");
  return p + "out";
}

inline ir::Graph blocks_graph(const BlockCase& bc) {
  GraphBuilder b;
  b.input("x", {bc.n, bc.c, bc.h, bc.w});
  std::string x = "x", residual = "x";
  if (bc.residual_broadcast) {
    b.input("r", {1, bc.c, bc.h, bc.w});
    residual = "r";
  }
  for (int i = 0; i < bc.blocks; ++i) {
    x = block(b, bc, x, residual, i);
    residual = x;
  }
  b.output(x);
  return b.finish();
}

// Seeded inputs for every graph input.
inline std::map<std::string, Tensor> block_feeds(const ir::Graph& g) { return testing_conv::random_feeds(g, 100); }

}  // namespace kilnrt::layerscaletest
