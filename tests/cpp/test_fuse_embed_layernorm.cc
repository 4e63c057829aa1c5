// passes/fuse_embed_layernorm: Gather -> Add -> LayerNorm at the start of BERT-like encoders becomes one
// com.kilnrt:EmbedLayerNorm whose CPU reference computes what the three ops computed (ids int64 / int32, negative
// ids, the Add's operands in either order, with and without bias, ONNX's or com.kilnrt's LayerNormalization, an
// addend of [1, S, H], [S, H] or [B, S, H]); no fusion where it would change the result or lose a value (the
// gathered rows read elsewhere, a LayerNorm over more than the last axis, an addend broadcasting the rows);
// KILNRT_NO_FUSION=embed-layernorm skips it; an out-of-range id is an error naming the node.
#include <gtest/gtest.h>

#include <cstdlib>

#include "embed_layernorm_test_util.h"
#include "passes/fuse_embed_layernorm.h"
#include "passes/optimize.h"

namespace kilnrt {
namespace {

using embedtest::EmbedSpec;
using embedtest::make_embed_case;

size_t fuse(ir::Graph& g) {
  const size_t n = passes::fuse_embed_layernorm(g);
  passes::infer_shapes(g);
  return n;
}

void expect_fused_matches(const EmbedSpec& sp) {
  embedtest::EmbedCase c = make_embed_case(sp);
  const Tensor want = passtest::run_cpu(c.g, c.feeds).at("y");
  ir::Graph g = c.g;
  ASSERT_EQ(fuse(g), 1u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "EmbedLayerNorm");
  EXPECT_EQ(g.nodes[0].domain, "com.kilnrt");
  EXPECT_FLOAT_EQ(g.nodes[0].attr_float("epsilon", 0.f), 1e-12f);
  const Tensor got = passtest::run_cpu(g, c.feeds).at("y");
  EXPECT_LT(passtest::max_rel_diff(got, want), 1e-5);
}

TEST(FuseEmbedLayerNorm, FusedGraphComputesTheSame) {
  expect_fused_matches({});
  EmbedSpec sp;
  sp.ids32 = true;
  sp.negative_ids = true;
  expect_fused_matches(sp);
  sp = {};
  sp.addend_first = true;
  sp.bias = false;
  expect_fused_matches(sp);
  sp = {};
  sp.kilnrt_ln = true;
  sp.addend = {5, 64};  // [S, H]
  expect_fused_matches(sp);
  sp = {};
  sp.addend = {2, 5, 64};  // [B, S, H]: one addend row per output row
  expect_fused_matches(sp);
  sp = {};
  sp.h = 100;  // rows the CUDA kernel's fast path does not take
  expect_fused_matches(sp);
}

TEST(FuseEmbedLayerNorm, LeavesWhatItCannotFuse) {
  {
    EmbedSpec sp;
    sp.gather_read_twice = true;
    embedtest::EmbedCase c = make_embed_case(sp);
    EXPECT_EQ(fuse(c.g), 0u) << "the gathered rows are also an output";
  }
  {
    EmbedSpec sp;
    sp.ln_axis = 1;  // over S and H
    embedtest::EmbedCase c = make_embed_case(sp);
    EXPECT_EQ(fuse(c.g), 0u) << "a LayerNorm over more than the last axis";
  }
  {
    EmbedSpec sp;
    sp.b = 1;
    sp.addend = {3, 5, 64};  // broadcasts the gathered [1, 5, 64] to [3, 5, 64]
    embedtest::EmbedCase c = make_embed_case(sp);
    EXPECT_EQ(fuse(c.g), 0u) << "an addend that broadcasts the rows";
  }
  {
    embedtest::EmbedCase c = make_embed_case({});
    setenv("KILNRT_NO_FUSION", "embed-layernorm", 1);
    const size_t n = fuse(c.g);
    unsetenv("KILNRT_NO_FUSION");
    EXPECT_EQ(n, 0u) << "KILNRT_NO_FUSION=embed-layernorm";
  }
}

TEST(FuseEmbedLayerNorm, OptimizerFusesIt) {
  embedtest::EmbedCase c = make_embed_case({});
  const Tensor want = passtest::run_cpu(c.g, c.feeds).at("y");
  ir::Graph g = c.g;
  passes::optimize_graph(g, {});
  EXPECT_EQ(passtest::count_ops(g, "EmbedLayerNorm"), 1u);
  EXPECT_EQ(passtest::count_ops(g, "Gather"), 0u);
  EXPECT_LT(passtest::max_rel_diff(passtest::run_cpu(g, c.feeds).at("y"), want), 1e-5);
}

TEST(FuseEmbedLayerNorm, OutOfRangeIdIsAnErrorNamingTheNode) {
  embedtest::EmbedCase c = make_embed_case({});
  ASSERT_EQ(fuse(c.g), 1u);
  c.feeds["ids"].data<int64_t>()[3] = 50;  // vocab 50
  try {
    passtest::run_cpu(c.g, c.feeds);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("embed_layernorm"), std::string::npos) << what;
    EXPECT_NE(what.find("out of range"), std::string::npos) << what;
  }
}

TEST(FuseEmbedLayerNorm, ZeroHiddenSizeIsNotFusedAndRuns) {
  EmbedSpec sp;
  sp.h = 0;
  embedtest::EmbedCase c = make_embed_case(sp);
  const Tensor want = passtest::run_cpu(c.g, c.feeds).at("y");
  EXPECT_EQ(want.shape(), (Shape{2, 5, 0}));
  ir::Graph g = c.g;
  EXPECT_EQ(fuse(g), 0u) << "a zero hidden size";
  passes::optimize_graph(g, {});
  EXPECT_EQ(passtest::count_ops(g, "EmbedLayerNorm"), 0u);
  EXPECT_EQ(passtest::run_cpu(g, c.feeds).at("y").shape(), (Shape{2, 5, 0}));
}

TEST(FuseEmbedLayerNorm, KernelWithZeroHiddenSizeGivesAnEmptyOutput) {
  // The node as a hand-made (or fuzzed) model could hold it, without the pass's checks.
  EmbedSpec sp;
  sp.h = 0;
  embedtest::EmbedCase c = make_embed_case(sp);
  ASSERT_EQ(c.g.nodes.size(), 3u);
  ir::Node f;
  f.name = "eln";
  f.op_type = "EmbedLayerNorm";
  f.domain = "com.kilnrt";
  f.inputs = {"ids", "table", "addend", "scale", "bias"};
  f.outputs = {"y"};
  c.g.nodes = {f};
  c.g.opsets["com.kilnrt"] = 1;
  passes::infer_shapes(c.g);
  EXPECT_EQ(passtest::run_cpu(c.g, c.feeds).at("y").shape(), (Shape{2, 5, 0}));
  c.feeds["ids"].data<int64_t>()[3] = 50;  // vocab 50: still checked
  EXPECT_THROW(passtest::run_cpu(c.g, c.feeds), std::exception);
}

}  // namespace
}  // namespace kilnrt
