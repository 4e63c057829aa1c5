// passes/fuse_add_layernorm and com.kilnrt:AddLayerNorm's CPU reference (issue 7): an Add read only by a
// LayerNormalization becomes one AddLayerNorm with the same outputs (a residual of X's shape, or position embeddings
// repeated over the batch); sums read elsewhere, rows the CUDA kernel cannot take and addends that do not repeat
// along X stay.
#include <gtest/gtest.h>

#include "add_layernorm_test_util.h"
#include "ops/nn/fused_attention.h"
#include "passes/fuse_layernorm.h"
#include "passes/optimize.h"

namespace kilnrt {
namespace {

using addlntest::AddLnCase;
using passtest::count_ops;
using passtest::max_rel_diff;

size_t fuse_and_compare(const AddLnCase& c, ir::Graph* out = nullptr) {
  std::map<std::string, Tensor> feeds;
  const ir::Graph before = addlntest::add_ln_graph(c, &feeds);
  ir::Graph after = before;
  const size_t n = passes::fuse_add_layernorm(after);
  passes::infer_shapes(after);
  const auto want = passtest::run_cpu(before, feeds);
  const auto got = passtest::run_cpu(after, feeds);
  for (const auto& [name, t] : want) EXPECT_LT(max_rel_diff(got.at(name), t), 1e-5) << name;
  if (out) *out = after;
  return n;
}

TEST(AddLayerNorm, ResidualAndEmbeddingSumsFuse) {
  for (bool embedding : {false, true}) {
    SCOPED_TRACE(embedding ? "embedding" : "residual");
    AddLnCase c;
    c.embedding = embedding;
    ir::Graph g;
    EXPECT_EQ(fuse_and_compare(c, &g), 1u);
    EXPECT_EQ(count_ops(g, "AddLayerNorm"), 1u);
    EXPECT_EQ(count_ops(g, "LayerNormalization"), 0u);
    EXPECT_EQ(count_ops(g, "Add"), embedding ? 0u : 1u) << g.to_string();  // the dense layer's bias stays
  }
}

TEST(AddLayerNorm, SumsThatCannotFuseStay) {
  AddLnCase pre_ln;  // the sum is read again (pre-LN residual stream)
  pre_ln.pre_ln = true;
  AddLnCase odd;  // 12 values a row: not a multiple of 8
  odd.e = 12;
  AddLnCase wide;  // 2048 values a row: over the kernel's 1024
  wide.e = 2048;
  wide.s = 2;
  for (const AddLnCase& c : {pre_ln, odd, wide}) EXPECT_EQ(fuse_and_compare(c), 0u);
  // An addend that broadcasts along another axis ([B, 1, E]) does not repeat along X's rows.
  attntest::Builder b;
  b.input("x", {2, 9, 16});
  b.input("r", {2, 1, 16});
  b.node("Add", {"x", "r"}, "sum");
  hoisttest::layer_norm(b, "sum", "ln", 16, "y");
  b.output("y");
  ir::Graph g = b.finish();
  EXPECT_EQ(passes::fuse_add_layernorm(g), 0u);
}

TEST(AddLayerNorm, ResidualRepeatRule) {
  using ops::nn::add_layernorm_residual_repeats;
  EXPECT_TRUE(add_layernorm_residual_repeats({2, 9, 16}, {2, 9, 16}));
  EXPECT_TRUE(add_layernorm_residual_repeats({2, 9, 16}, {1, 9, 16}));
  EXPECT_TRUE(add_layernorm_residual_repeats({2, 9, 16}, {16}));
  EXPECT_TRUE(add_layernorm_residual_repeats({2, 9, 16}, {1, 1, 1, 16}));
  EXPECT_FALSE(add_layernorm_residual_repeats({2, 9, 16}, {2, 1, 16}));
  EXPECT_FALSE(add_layernorm_residual_repeats({2, 9, 16}, {9, 8}));
  EXPECT_FALSE(add_layernorm_residual_repeats({9, 16}, {2, 9, 16}));
}

TEST(AddLayerNorm, OptimizedGraphTakesTheResidualFromTheGemm) {
  // Through optimize_graph the residual goes to AddLayerNorm and the GEMM keeps bias only (no C operand); switched
  // off, the GEMM takes the residual as before.
  std::map<std::string, Tensor> feeds;
  const ir::Graph original = addlntest::add_ln_graph(AddLnCase{}, &feeds);
  const auto want = passtest::run_cpu(original, feeds);
  for (bool off : {false, true}) {
    SCOPED_TRACE(off ? "KILNRT_NO_FUSION=add-layernorm" : "default");
    if (off) setenv("KILNRT_NO_FUSION", "add-layernorm", 1);
    ir::Graph g = original;
    passes::optimize_graph(g);
    unsetenv("KILNRT_NO_FUSION");
    EXPECT_LT(max_rel_diff(passtest::run_cpu(g, feeds).at("y"), want.at("y")), 1e-5);
    size_t residual_gemms = 0;
    for (const ir::Node& n : g.nodes)
      residual_gemms += n.op_type == "FusedMatMul" && n.inputs.size() == 4 && !n.inputs[3].empty();
    EXPECT_EQ(count_ops(g, "AddLayerNorm"), off ? 0u : 1u) << g.to_string();
    EXPECT_EQ(residual_gemms, off ? 1u : 0u) << g.to_string();
  }
}

}  // namespace
}  // namespace kilnrt
