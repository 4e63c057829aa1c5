// Edge cases of the indexing and layout ops (GatherND, ScatterND / ScatterElements reductions, NonZero, Compress,
// OneHot, EyeLike, DepthToSpace / SpaceToDepth) on the CPU reference; the full behaviour is covered by ONNX's node
// cases (tests/python/test_conformance.py).
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

TEST(IndexOps, GatherNDBatchDimsAndNegativeIndex) {
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

// Fuzz finding (onnx_build, at 670,959 of a 1M run): GatherND with rank-0 indices read dim(-1) of an empty
// shape (UBSan), and an index depth of 0 divided by zero; input tests/fixtures/fuzz/onnx_build/gathernd_scalar_indices.
TEST(IndexOps, GatherNDScalarOrZeroDepthIndicesAreErrors) {
  Tensor x = f32({0, 1, 2, 3}, {2, 2});
  Node n("GatherND", 2);
  Tensor scalar = i64({1}, {});
  expect_error_naming([&] { run1(n.node, {&x, &scalar}); }, n.node, ErrorCode::kInvalidModel);
  Tensor depth0 = i64({}, {3, 0});
  expect_error_naming([&] { run1(n.node, {&x, &depth0}); }, n.node, ErrorCode::kInvalidModel);
  Tensor ok = i64({1, 0}, {1, 2});
  expect_values(run1(n.node, {&x, &ok}), {2});
}

TEST(IndexOps, ScatterNDAndElementsReductions) {
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

TEST(IndexOps, NonZeroCompressOneHotEyeLike) {
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

TEST(IndexOps, DepthToSpaceInvertsSpaceToDepth) {
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

}  // namespace
}  // namespace kilnrt::ops::optest
