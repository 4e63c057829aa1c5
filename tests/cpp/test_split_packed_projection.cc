// passes/split_packed_projection on the CPU backend: MultiheadAttention's packed in-projection, once
// select_packed_qkv has made its q / k / v selects Slices, becomes one GEMM per part (no Slice copies left), inside
// fuse_attention and through the whole optimizer; the outputs stay equal. And passes/batch_first_attention: the
// batch_first block's two transposes per layer dropped (the region runs in [B, S, ...] order). Left alone: a projection
// read elsewhere, a packed view with another reader.
#include <gtest/gtest.h>

#include "passes/dead_code.h"
#include "passes/fuse_attention.h"
#include "passes/optimize.h"
#include "passes/select_packed_qkv.h"
#include "passes/split_packed_projection.h"
#include "qkv_test_util.h"
#include "split_projection_test_util.h"

namespace kilnrt {
namespace {

using attntest::Builder;
using passtest::count_ops;
using passtest::max_rel_diff;

TEST(SplitPackedProjection, VitInProjectionBecomesThreeGemmsWithoutSlices) {
  // The split alone: pack_qkv_projection (which packs the three GEMMs again after fusing) switched off.
  const attntest::ScopedNoFusion no_packing("qkv-pack");
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    Builder b;
    const ir::Graph g = attntest::projected_mha_block(b, 3, 13, 2, 8, bias);
    const auto want = passtest::run_cpu(g, b.feeds).at("y");
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    passes::infer_shapes(after);
    EXPECT_EQ(count_ops(after, "Slice"), 0u) << after.to_string(false);
    EXPECT_EQ(count_ops(after, "MatMul"), 3u);
    EXPECT_EQ(count_ops(after, "Add"), bias ? 3u : 0u);
    EXPECT_EQ(count_ops(after, "FusedAttention"), 1u);
    EXPECT_LE(max_rel_diff(passtest::run_cpu(after, b.feeds).at("y"), want), 1e-5);
    ir::Graph opt = g;
    passes::optimize_graph(opt);
    EXPECT_EQ(count_ops(opt, "Slice") + count_ops(opt, "Transpose") + count_ops(opt, "Gather"), 0u)
        << opt.to_string(false);
    EXPECT_EQ(count_ops(opt, bias ? "FusedMatMul" : "MatMul"), 3u);
    EXPECT_LE(max_rel_diff(passtest::run_cpu(opt, b.feeds).at("y"), want), 1e-5);
  }
}

TEST(SplitPackedProjection, ProjectionReadElsewhereOrPartialSlicesAreLeftAlone) {
  {  // the packed projection is also a graph output: the GEMM stays, so do the Slices
    Builder b;
    const ir::Graph g = attntest::projected_mha_block(b, 2, 5, 2, 4, true, /*projection_is_output=*/true);
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "Slice"), 3u);
    EXPECT_EQ(count_ops(after, "MatMul"), 1u);
    passes::infer_shapes(after);
    const auto want = passtest::run_cpu(g, b.feeds), got = passtest::run_cpu(after, b.feeds);
    for (const char* o : {"y", "proj_sbe"}) EXPECT_LE(max_rel_diff(got.at(o), want.at(o)), 1e-5) << o;
  }
  {  // another reader of the [S, B, 3, E] view besides the part Slices: left alone
    Builder b;
    ir::Graph g = attntest::projected_mha_block(b, 2, 5, 2, 4, true);
    ASSERT_EQ(passes::select_packed_qkv(g), 3u);
    passes::eliminate_dead_code(g);
    ir::Node neg;
    neg.name = "neg";
    neg.op_type = "Neg";
    neg.inputs = {"proj_sbe_4"};
    neg.outputs = {"z"};
    g.nodes.push_back(neg);
    g.outputs.push_back("z");
    passes::infer_shapes(g);
    EXPECT_EQ(passes::split_packed_projection(g), 0u);
    EXPECT_EQ(count_ops(g, "Slice"), 3u);
  }
}

TEST(BatchFirstAttention, VitTransposesAroundAttentionAreDropped) {
  // B = 3, S = 13 (told apart by shapes); after fuse_attention no Transpose is left, the out-projection is a MatMul
  // on [B, S, E], and through the optimizer it takes the residual Add as its C operand.
  Builder b;
  const ir::Graph g = attntest::batch_first_mha_block(b, 3, 13, 2, 8);
  const auto want = passtest::run_cpu(g, b.feeds).at("out");
  ir::Graph after = g;
  EXPECT_EQ(passes::fuse_attention(after), 1u);
  passes::infer_shapes(after);
  EXPECT_EQ(count_ops(after, "Transpose"), 0u) << after.to_string(false);
  EXPECT_EQ(count_ops(after, "Gemm"), 0u);
  EXPECT_LE(max_rel_diff(passtest::run_cpu(after, b.feeds).at("out"), want), 1e-5);
  ir::Graph opt = g;
  passes::optimize_graph(opt);
  EXPECT_EQ(count_ops(opt, "Transpose") + count_ops(opt, "Add") + count_ops(opt, "Slice"), 0u) << opt.to_string(false);
  EXPECT_EQ(count_ops(opt, "FusedMatMul"), 2u);  // the in-projection packed again (pack_qkv_projection), the out
  EXPECT_LE(max_rel_diff(passtest::run_cpu(opt, b.feeds).at("out"), want), 1e-5);
}

TEST(BatchFirstAttention, OtherReadersOrEqualBatchAndSequenceKeepTheTransposes) {
  {  // the [S, B, E] out-projection is also a graph output
    Builder b;
    const ir::Graph g = attntest::batch_first_mha_block(b, 3, 13, 2, 8, /*exit_is_output=*/true);
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "Transpose"), 2u);
    passes::infer_shapes(after);
    const auto want = passtest::run_cpu(g, b.feeds), got = passtest::run_cpu(after, b.feeds);
    for (const char* o : {"out", "o3"}) EXPECT_LE(max_rel_diff(got.at(o), want.at(o)), 1e-5) << o;
  }
  {  // B == S: shapes cannot tell the axes apart
    Builder b;
    const ir::Graph g = attntest::batch_first_mha_block(b, 4, 4, 2, 8);
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "Transpose"), 2u);
    passes::infer_shapes(after);
    EXPECT_LE(max_rel_diff(passtest::run_cpu(after, b.feeds).at("out"), passtest::run_cpu(g, b.feeds).at("out")), 1e-5);
  }
}

}  // namespace
}  // namespace kilnrt
