// Edge cases of the loss-family ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Hardmax) on the CPU
// reference; the full behaviour is covered by ONNX's node cases (tests/python/test_conformance.py).
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

TEST(LossOps, NllMeanWithIgnoreIndexDividesByKeptWeights) {
  // N=3, C=2: log-probs; targets 1, 0 (ignored), 1; weights {2, 3}.
  Tensor x = f32({-1, -2, -3, -4, -5, -6}, {3, 2});
  Tensor t = i64({1, 0, 1}, {3});
  Tensor w = f32({2, 3}, {2});
  Node n("NegativeLogLikelihoodLoss", 3);
  n.i("ignore_index", 0);
  // kept: (0, t=1): 2*3=6 ; (2, t=1): 6*3=18 ; weights 3+3
  expect_values(run1(n.node, {&x, &t, &w}, 13), {(6.0 + 18.0) / 6.0});
  // every target ignored: mean is 0, not NaN
  Tensor t0 = i64({0, 0, 0}, {3});
  expect_values(run1(n.node, {&x, &t0, &w}, 13), {0.0});
  Node none("NegativeLogLikelihoodLoss", 3);
  none.s("reduction", "none");
  Tensor out = run1(none.node, {&x, &t, nullptr}, 13);
  EXPECT_EQ(out.shape(), (Shape{3}));
  expect_values(out, {2, 3, 6});
  Tensor bad = i64({2, 0, 0}, {3});
  expect_error_naming([&] { run1(none.node, {&x, &bad, nullptr}, 13); }, none.node, ErrorCode::kInvalidArgument);
}

TEST(LossOps, SoftmaxCrossEntropyLogProbOutput) {
  Tensor x = f32({0, 0, 1, 1}, {2, 2});
  Tensor t = i64({0, 1}, {2});
  Node n("SoftmaxCrossEntropyLoss", 2, 2);
  std::vector<Tensor> out = run(n.node, {&x, &t}, 13);
  expect_values(out[0], {std::log(2.0)}, 1e-6);
  expect_values(out[1], {-std::log(2.0), -std::log(2.0), -std::log(2.0), -std::log(2.0)}, 1e-6);
}

TEST(LossOps, HardmaxTiesPickFirstAndOldOpsetCoerces) {
  Tensor x = f32({1, 3, 3, 0, 5, 2}, {2, 3});
  expect_values(run1(Node("Hardmax", 1).node, {&x}, 13), {0, 1, 0, 0, 1, 0});
  Tensor y = f32({1, 2, 4, 3}, {1, 2, 2});  // opset 11, axis 1: one max over the 2x2 block
  expect_values(run1(Node("Hardmax", 1).node, {&y}, 11), {0, 0, 1, 0});
}

}  // namespace
}  // namespace kilnrt::ops::optest
