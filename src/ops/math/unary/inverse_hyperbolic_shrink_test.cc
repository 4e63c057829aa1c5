// Edge cases of the inverse hyperbolic functions and Shrink on the CPU reference; the full behaviour is covered by
// ONNX's node cases (tests/python/test_conformance.py).
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

TEST(UnaryOps, InverseHyperbolicsAndShrink) {
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
