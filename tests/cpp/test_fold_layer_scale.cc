// passes/fold_layer_scale on the CPU backend: ConvNeXt's layer scale goes into the second Linear's weights
// and bias, the skip connection moves next to the GEMM (permuted to its layout), so that the GEMM epilogue pass
// takes it as the FusedMatMul's residual; outputs equal the unrewritten graph's. Chains that do not fit are left
// alone.
#include <gtest/gtest.h>

#include <cstdlib>

#include "layer_scale_test_util.h"
#include "passes/fold_layer_scale.h"
#include "passes/optimize.h"

namespace kilnrt {
namespace {

using layerscaletest::BlockCase;
using passtest::count_ops;
using passtest::max_rel_diff;

// Float32: the folded products are rounded once in another place; the sums are the same.
constexpr double kTol = 2e-5;

// Rewrites a copy of `before`; returns how many layer scales were folded, checks equal outputs on the CPU.
size_t fold_and_compare(const ir::Graph& before) {
  const auto feeds = layerscaletest::block_feeds(before);
  ir::Graph after = before;
  const size_t n = passes::fold_layer_scale(after);
  passes::infer_shapes(after);
  const auto want = passtest::run_cpu(before, feeds);
  const auto got = passtest::run_cpu(after, feeds);
  for (const auto& [name, t] : want) EXPECT_LT(max_rel_diff(got.at(name), t), kTol) << name;
  return n;
}

// FusedMatMul nodes that take a residual (4 inputs, the 4th present).
size_t residual_gemms(const ir::Graph& g) {
  size_t k = 0;
  for (const ir::Node& n : g.nodes) k += n.op_type == "FusedMatMul" && n.inputs.size() == 4 && !n.inputs[3].empty();
  return k;
}

TEST(FoldLayerScale, ConvNextBlocksFoldAndMoveTheSkipConnection) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    BlockCase bc;
    bc.bias = bias;
    const ir::Graph before = layerscaletest::blocks_graph(bc);
    ir::Graph g = before;
    ASSERT_EQ(passes::fold_layer_scale(g), 2u);
    passes::infer_shapes(g);
    // Per block: the Mul by gamma is gone (the GELU's two Muls stay), one Transpose more (the skip connection's).
    EXPECT_EQ(count_ops(g, "Mul"), count_ops(before, "Mul") - 2);
    EXPECT_EQ(count_ops(g, "Transpose"), count_ops(before, "Transpose") + 2);
    EXPECT_EQ(g.outputs, before.outputs);
    // Block 0's residual Add now adds the permuted input to the channels-last GEMM result: [N, H, W, C].
    for (const ir::Node& n : g.nodes) {
      if (n.op_type != "Add" || n.outputs[0].find("b0_out") == std::string::npos) continue;
      const ir::TensorType* t = g.type_of(n.outputs[0]);
      ASSERT_TRUE(t && t->has_shape);
      EXPECT_EQ(ir::sym_shape_to_shape(t->shape), (Shape{bc.n, bc.h, bc.w, bc.c}));
    }
    EXPECT_EQ(fold_and_compare(before), 2u);
    // Through the whole pipeline: each block's second GEMM is one FusedMatMul with the skip connection as C, and no
    // Mul by gamma or residual Add is left for the pointwise fusion.
    ir::Graph opt = before;
    passes::optimize_graph(opt);
    EXPECT_EQ(residual_gemms(opt), 2u) << opt.to_string();
    EXPECT_EQ(count_ops(opt, "Add"), 0u) << opt.to_string();
    EXPECT_EQ(count_ops(opt, "Mul"), 0u) << opt.to_string();
    const auto feeds = layerscaletest::block_feeds(before);
    const auto want = passtest::run_cpu(before, feeds);
    const auto got = passtest::run_cpu(opt, feeds);
    for (const auto& [name, t] : want) EXPECT_LT(max_rel_diff(got.at(name), t), 1e-4) << name;
  }
}

TEST(FoldLayerScale, SymbolicBatchStillReachesTheGemm) {
  // Dynamic-batch engines: the batch is a named dim ("N"); the permuted skip connection keeps it, so the GEMM
  // epilogue pass still sees the residual's shape equal to the GEMM's.
  ir::Graph g = layerscaletest::blocks_graph(BlockCase{});
  for (auto& [name, t] : g.types)
    if (name != "x") t.has_shape = false;
  g.types.at("x").shape[0] = ir::Dim::symbol("N");
  passes::infer_shapes(g);
  const ir::TensorType* out = g.type_of(g.outputs[0]);
  ASSERT_TRUE(out && out->has_shape && out->shape.size() == 4);
  ASSERT_EQ(out->shape[0].param, "N");
  passes::optimize_graph(g);
  EXPECT_EQ(residual_gemms(g), 2u) << g.to_string();
  EXPECT_EQ(count_ops(g, "Add"), 0u) << g.to_string();
}

TEST(FoldLayerScale, ScalesTheWeightsPerOutputChannel) {
  // One block, gamma with a zero, a negative and a large channel: W' [K, N] = W * gamma[n], b' = b * gamma.
  BlockCase bc;
  bc.blocks = 1;
  bc.gamma_lo = -3.f;
  bc.gamma_hi = 3.f;
  ir::Graph g = layerscaletest::blocks_graph(bc);
  Tensor& gamma = g.constants.at("b0_gamma");
  gamma.data<float>()[0] = 0.f;
  gamma.data<float>()[1] = -2.f;
  const Tensor w = g.constants.at("b0_w2"), b = g.constants.at("b0_b2"), gm = gamma;
  EXPECT_EQ(fold_and_compare(g), 1u);
  ASSERT_EQ(passes::fold_layer_scale(g), 1u);
  const ir::Node* mm = nullptr;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "MatMul" && n.outputs[0] == "b0_mm2") mm = &n;
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(mm->inputs[1], "b0_w2") << "a new constant (the old one may be shared)";
  const Tensor& w2 = g.constants.at(mm->inputs[1]);
  ASSERT_EQ(w2.shape(), w.shape());
  const int64_t n = w.shape()[1];
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_EQ(w2.data<float>()[i], static_cast<float>(double(w.data<float>()[i]) * gm.data<float>()[i % n])) << i;
  EXPECT_EQ(g.constants.at("b0_w2").data<float>()[0], w.data<float>()[0]) << "the original weights are untouched";
  bool bias_checked = false;
  for (const ir::Node& node : g.nodes) {
    if (node.op_type != "Add" || node.outputs[0] != "b0_fc2") continue;
    const Tensor& b2 = g.constants.at(node.inputs[0] == "b0_mm2" ? node.inputs[1] : node.inputs[0]);
    for (int64_t j = 0; j < n; ++j)
      EXPECT_EQ(b2.data<float>()[j], static_cast<float>(double(b.data<float>()[j]) * gm.data<float>()[j])) << j;
    bias_checked = true;
  }
  EXPECT_TRUE(bias_checked);
}

// x [N, L, C] -> MatMul [C, C] + b -> Mul(gamma) -> Add(x): a transformer layer scale, no permutation.
ir::Graph tokens_graph(const Shape& gamma_shape) {
  testing_conv::GraphBuilder b;
  b.input("x", {2, 7, 12});
  b.node("MatMul", {"x", b.random_constant("w", {12, 12}, -0.5f, 0.5f)}, {"mm"});
  b.node("Add", {"mm", b.random_constant("bias", {12})}, {"fc"});
  b.node("Mul", {"fc", b.random_constant("gamma", gamma_shape, 0.2f, 1.2f)}, {"scaled"});
  b.node("Add", {"x", "scaled"}, {"y"});
  b.output("y");
  return b.finish();
}

TEST(FoldLayerScale, TokensWithoutPermutationAndScalarScale) {
  for (const Shape& gs : {Shape{12}, Shape{1, 1, 12}, Shape{}, Shape{1}}) {
    SCOPED_TRACE(shape_to_string(gs));
    const ir::Graph before = tokens_graph(gs);
    ir::Graph g = before;
    ASSERT_EQ(passes::fold_layer_scale(g), 1u);
    passes::infer_shapes(g);
    EXPECT_EQ(count_ops(g, "Mul"), 0u);
    EXPECT_EQ(count_ops(g, "Transpose"), 0u);
    EXPECT_EQ(fold_and_compare(before), 1u);
    ir::Graph opt = before;
    passes::optimize_graph(opt);
    EXPECT_EQ(residual_gemms(opt), 1u) << opt.to_string();
  }
}

TEST(FoldLayerScale, ChainsThatDoNotFitAreLeftAlone) {
  {  // gamma varies along H, not along the Linear's output channels
    BlockCase bc;
    bc.gamma_shape = {1, bc.h, 1};
    EXPECT_EQ(fold_and_compare(layerscaletest::blocks_graph(bc)), 0u);
  }
  {  // gamma [L, 1] scales tokens, not the output channels of the tokens graph's [N, L, C]
    EXPECT_EQ(fold_and_compare(tokens_graph({7, 1})), 0u);
  }
  {  // the skip connection broadcasts over N: not the GEMM's C operand
    BlockCase bc;
    bc.blocks = 1;
    bc.residual_broadcast = true;
    EXPECT_EQ(fold_and_compare(layerscaletest::blocks_graph(bc)), 0u);
  }
  {  // block 0's permuted value is also a graph output: block 0 stays, block 1 folds
    BlockCase bc;
    bc.permuted_read_elsewhere = true;
    ir::Graph g = layerscaletest::blocks_graph(bc);
    EXPECT_EQ(fold_and_compare(g), 1u);
  }
  {  // a non-constant scale
    testing_conv::GraphBuilder b;
    b.input("x", {2, 7, 12});
    b.input("s", {12});
    b.node("MatMul", {"x", b.random_constant("w", {12, 12})}, {"mm"});
    b.node("Mul", {"mm", "s"}, {"scaled"});
    b.node("Add", {"scaled", "x"}, {"y"});
    b.output("y");
    EXPECT_EQ(fold_and_compare(b.finish()), 0u);
  }
  {  // KILNRT_NO_FUSION=layer-scale turns the pass off
    setenv("KILNRT_NO_FUSION", "layer-scale", 1);
    ir::Graph g = layerscaletest::blocks_graph(BlockCase{});
    const size_t n = passes::fold_layer_scale(g);
    unsetenv("KILNRT_NO_FUSION");
    EXPECT_EQ(n, 0u);
  }
}

TEST(FoldLayerScale, SharedWeightsGetTheirOwnScaledCopies) {
  // Two Linears reading the same W, each with its own layer scale and skip connection.
  testing_conv::GraphBuilder b;
  b.input("x", {3, 5, 8});
  const std::string w = b.random_constant("w", {8, 8}, -0.5f, 0.5f);
  b.node("MatMul", {"x", w}, {"mm0"});
  b.node("Mul", {"mm0", b.random_constant("g0", {8}, 0.5f, 1.5f)}, {"s0"});
  b.node("Add", {"s0", "x"}, {"y0"});
  b.node("MatMul", {"y0", w}, {"mm1"});
  b.node("Mul", {b.random_constant("g1", {8}, -1.5f, -0.5f), "mm1"}, {"s1"});
  b.node("Add", {"y0", "s1"}, {"y1"});
  b.output("y1");
  const ir::Graph before = b.finish();
  ir::Graph g = before;
  ASSERT_EQ(passes::fold_layer_scale(g), 2u);
  std::vector<std::string> weights;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "MatMul") weights.push_back(n.inputs[1]);
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_NE(weights[0], weights[1]);
  EXPECT_EQ(fold_and_compare(before), 2u);
}

}  // namespace
}  // namespace kilnrt
