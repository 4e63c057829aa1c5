// MatMul -> Add(bias) with an empty inner dim (K = 0) through the optimizer: the product is zeros, so every row of
// the result is the bias, fused into com.kilnrt:FusedMatMul or not.
#include <gtest/gtest.h>

#include "attention_test_util.h"
#include "passes/optimize.h"
#include "passes/shape_inference.h"

namespace kilnrt {
namespace {

TEST(GemmEpilogueEmptyK, EveryRowIsTheBias) {
  attntest::Builder b(17);
  b.input("a", {2, 3, 0});
  b.constant("w", attntest::random_tensor({0, 4}, 3));
  Tensor bias = Tensor::empty(DType::kFloat32, {4});
  for (int64_t j = 0; j < 4; ++j) bias.data<float>()[j] = 1.5f * float(j) - 2.f;
  b.constant("bias", bias);
  b.node("MatMul", {"a", "w"}, "mm");
  b.node("Add", {"mm", "bias"}, "y");
  b.output("y");
  ir::Graph g = b.finish();
  const Tensor plain = passtest::run_cpu(g, b.feeds).at("y");
  passes::optimize_graph(g, {});
  EXPECT_EQ(passtest::count_ops(g, "FusedMatMul"), 1u);
  const Tensor fused = passtest::run_cpu(g, b.feeds).at("y");
  for (const Tensor* y : {&plain, &fused}) {
    ASSERT_EQ(y->shape(), (Shape{2, 3, 4}));
    for (int64_t i = 0; i < y->numel(); ++i) EXPECT_EQ(y->data<float>()[i], bias.data<float>()[i % 4]) << i;
  }
}

}  // namespace
}  // namespace kilnrt
