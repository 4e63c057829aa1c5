// Ops added for ONNX conformance (tests/conformance): losses, indexing / layout ops, inverse hyperbolics, Shrink.
// One or more edge cases each; the full behaviour is covered by ONNX's node cases (tests/python/test_conformance.py).
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

TEST(OpsExtraLoss, NllMeanWithIgnoreIndexDividesByKeptWeights) {
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

TEST(OpsExtraLoss, SoftmaxCrossEntropyLogProbOutput) {
  Tensor x = f32({0, 0, 1, 1}, {2, 2});
  Tensor t = i64({0, 1}, {2});
  Node n("SoftmaxCrossEntropyLoss", 2, 2);
  std::vector<Tensor> out = run(n.node, {&x, &t}, 13);
  expect_values(out[0], {std::log(2.0)}, 1e-6);
  expect_values(out[1], {-std::log(2.0), -std::log(2.0), -std::log(2.0), -std::log(2.0)}, 1e-6);
}

TEST(OpsExtraIndex, GatherNDBatchDimsAndNegativeIndex) {
  Tensor x = f32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  Tensor ind = i64({1, -2}, {2, 1});
  Node n("GatherND", 2);
  n.i("batch_dims", 1);
  Tensor y = run1(n.node, {&x, &ind});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_values(y, {2, 3, 4, 5});
  Tensor oob = i64({2, 0}, {2, 1});
  expect_error_naming([&] { run1(n.node, {&x, &oob}); }, n.node, ErrorCode::kInvalidArgument);
}

// Fuzz finding (onnx_build, session-3 final run, at 670,959): GatherND with rank-0 indices read dim(-1) of an empty
// shape (UBSan), and an index depth of 0 divided by zero; input tests/fixtures/fuzz/onnx_build/gathernd_scalar_indices.
TEST(OpsExtraIndex, GatherNDScalarOrZeroDepthIndicesAreErrors) {
  Tensor x = f32({0, 1, 2, 3}, {2, 2});
  Node n("GatherND", 2);
  Tensor scalar = i64({1}, {});
  expect_error_naming([&] { run1(n.node, {&x, &scalar}); }, n.node, ErrorCode::kInvalidModel);
  Tensor depth0 = i64({}, {3, 0});
  expect_error_naming([&] { run1(n.node, {&x, &depth0}); }, n.node, ErrorCode::kInvalidModel);
  Tensor ok = i64({1, 0}, {1, 2});
  expect_values(run1(n.node, {&x, &ok}), {2});
}

TEST(OpsExtraIndex, ScatterNDAndElementsReductions) {
  Tensor x = f32({1, 2, 3, 4}, {4});
  Tensor ind = i64({1, 1}, {2, 1});
  Tensor upd = f32({10, 20}, {2});
  Node add("ScatterND", 3);
  add.s("reduction", "add");
  expect_values(run1(add.node, {&x, &ind, &upd}), {1, 32, 3, 4});
  Node el("ScatterElements", 3);
  el.s("reduction", "max");
  Tensor ind2 = i64({-1, 0}, {2});
  expect_values(run1(el.node, {&x, &ind2, &upd}), {20, 2, 3, 10});
}

TEST(OpsExtraIndex, NonZeroCompressOneHotEyeLike) {
  Tensor x = f32({0, 1, 2, 0}, {2, 2});
  Tensor nz = run1(Node("NonZero", 1).node, {&x});
  EXPECT_EQ(nz.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints_of(nz), (std::vector<int64_t>{0, 1, 1, 0}));
  Tensor zeros = f32({0, 0}, {2});
  EXPECT_EQ(run1(Node("NonZero", 1).node, {&zeros}).shape(), (Shape{1, 0}));  // nothing found: empty
  Tensor cond = boolean({0, 1}, {2});
  Node c("Compress", 2);
  c.i("axis", 1);
  expect_values(run1(c.node, {&x, &cond}), {1, 0});
  Tensor idx = i64({-1, 5}, {2});  // -1 wraps to depth-1; out of range gives an all-off row
  Tensor depth = i64_scalar(3);
  Tensor vals = f32({0, 1}, {2});
  Tensor oh = run1(Node("OneHot", 3).node, {&idx, &depth, &vals});
  EXPECT_EQ(oh.shape(), (Shape{2, 3}));
  expect_values(oh, {0, 0, 1, 0, 0, 0});
  Node eye("EyeLike", 1);
  eye.i("k", 1);
  expect_values(run1(eye.node, {&x}), {0, 1, 0, 0});
}

TEST(OpsExtraLayout, DepthToSpaceInvertsSpaceToDepth) {
  Tensor x = ramp({1, 2, 4, 6});
  Node s2d("SpaceToDepth", 1);
  s2d.i("blocksize", 2);
  Tensor d = run1(s2d.node, {&x});
  EXPECT_EQ(d.shape(), (Shape{1, 8, 2, 3}));
  Node d2s("DepthToSpace", 1);
  d2s.i("blocksize", 2);
  Tensor back = run1(d2s.node, {&d});
  expect_values(back, values(x));
  Node crd("DepthToSpace", 1);
  crd.i("blocksize", 2).s("mode", "CRD");
  Tensor c = f32({0, 1, 2, 3}, {1, 4, 1, 1});
  expect_values(run1(crd.node, {&c}), {0, 1, 2, 3});
}

TEST(OpsExtraUnary, InverseHyperbolicsAndShrink) {
  Tensor x = f32({0.5f, -0.5f}, {2});
  expect_values(run1(Node("Atanh", 1).node, {&x}), {std::atanh(0.5), std::atanh(-0.5)}, 1e-6);
  expect_values(run1(Node("Asinh", 1).node, {&x}), {std::asinh(0.5), std::asinh(-0.5)}, 1e-6);
  Tensor one = f32({1.0f}, {1});
  expect_values(run1(Node("Acosh", 1).node, {&one}), {0.0});
  Tensor s = f32({-2, -0.25f, 0.25f, 2}, {4});
  Node sh("Shrink", 1);
  sh.f("lambd", 0.5f).f("bias", 1.0f);
  expect_values(run1(sh.node, {&s}), {-1, 0, 0, 1});
}

}  // namespace
}  // namespace kilnrt::ops::optest

namespace kilnrt::ops::optest {
namespace {
TEST(OpsExtraNn, HardmaxTiesPickFirstAndOldOpsetCoerces) {
  Tensor x = f32({1, 3, 3, 0, 5, 2}, {2, 3});
  expect_values(run1(Node("Hardmax", 1).node, {&x}, 13), {0, 1, 0, 0, 1, 0});
  Tensor y = f32({1, 2, 4, 3}, {1, 2, 2});  // opset 11, axis 1: one max over the 2x2 block
  expect_values(run1(Node("Hardmax", 1).node, {&y}, 11), {0, 0, 1, 0});
}
}  // namespace
}  // namespace kilnrt::ops::optest
