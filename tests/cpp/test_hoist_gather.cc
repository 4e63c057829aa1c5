// passes/hoist_gather on the CPU backend: the token a ViT classifier reads (Gather after the last
// LayerNorm) moves above the last block's row-wise ops, which then compute only that token, with the same outputs;
// Gathers along a normalised / contracted axis, or whose data is read elsewhere, stay.
#include <gtest/gtest.h>

#include <cstdlib>

#include "hoist_gather_test_util.h"
#include "passes/hoist_gather.h"
#include "passes/optimize.h"

namespace kilnrt {
namespace {

using hoisttest::TailCase;
using passtest::count_ops;
using passtest::max_rel_diff;

// Rewrites a copy of the case's graph; checks equal outputs and returns the rewritten graph and the op count.
ir::Graph rewrite_and_compare(const TailCase& tc, size_t* moved) {
  std::map<std::string, Tensor> feeds;
  const ir::Graph before = hoisttest::tail_graph(tc, &feeds);
  ir::Graph after = before;
  *moved = passes::hoist_gathers(after);
  const auto want = passtest::run_cpu(before, feeds);
  const auto got = passtest::run_cpu(after, feeds);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) EXPECT_LT(max_rel_diff(got.at(name), t), 1e-5) << name;
  return after;
}

// The leading dims of every MatMul's first input (all but the contracted last one).
std::vector<Shape> matmul_rows(const ir::Graph& g) {
  std::vector<Shape> out;
  for (const ir::Node& n : g.nodes) {
    if (n.op_type != "MatMul") continue;
    Shape s = ir::sym_shape_to_shape(g.type_of(n.inputs[0])->shape);
    s.pop_back();
    out.push_back(s);
  }
  return out;
}

TEST(HoistGather, ClassTokenMovesAboveTheLastBlock) {
  size_t moved = 0;
  const ir::Graph g = rewrite_and_compare(TailCase{}, &moved);
  // LN, Add x2, fc2 (Add, MatMul), GELU (Mul, Mul, Add, Erf, Div), fc1 (Add, MatMul), LN2, Add x1,
  // out-projection (Add, MatMul) and Add(x, pos): 16 ops.
  EXPECT_EQ(moved, 16u) << g.to_string();
  // One Gather on each graph input the block reads; the constant position embedding was cut instead.
  EXPECT_EQ(count_ops(g, "Gather"), 2u) << g.to_string();
  EXPECT_EQ(count_ops(g, "Squeeze"), 1u);
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "Gather") EXPECT_TRUE(n.inputs[0] == "x" || n.inputs[0] == "attn") << n.inputs[0];
  // Every GEMM now reads one row per image: [B, 1] (the head reads the squeezed [B]).
  for (const Shape& rows : matmul_rows(g)) EXPECT_TRUE(rows == Shape({2, 1}) || rows == Shape({2})) << g.to_string();
}

TEST(HoistGather, AttentionComputesOnlyThePickedQueries) {
  for (bool scalar : {true, false}) {
    TailCase tc;
    tc.heads = 2;
    tc.scalar_index = scalar;
    tc.index = scalar ? std::vector<int64_t>{0} : std::vector<int64_t>{4, 0};
    size_t moved = 0;
    const ir::Graph g = rewrite_and_compare(tc, &moved);
    EXPECT_EQ(moved, 18u) << g.to_string();  // the 16 above, the heads' Reshape and the attention
    // The attention reads the picked rows of p as queries, all of p as keys and values.
    size_t attention = 0;
    for (const ir::Node& n : g.nodes) {
      if (n.op_type != "FusedAttention") continue;
      ++attention;
      EXPECT_EQ(ir::sym_shape_to_shape(g.type_of(n.inputs[0])->shape), Shape({2, scalar ? 1 : 2, 6, 8}));
      EXPECT_EQ(n.inputs[1], "p");
      EXPECT_EQ(n.inputs[2], "p");
    }
    EXPECT_EQ(attention, 1u);
  }
}

TEST(HoistGather, RowListsAndNegativeIndices) {
  for (const auto& [index, scalar] :
       std::vector<std::pair<std::vector<int64_t>, bool>>{{{2, 0}, false}, {{-1}, true}, {{8, 8, 3}, false}}) {
    SCOPED_TRACE(std::to_string(index[0]) + " ... (" + std::to_string(index.size()) + ")");
    TailCase tc;
    tc.index = index;
    tc.scalar_index = scalar;
    size_t moved = 0;
    const ir::Graph g = rewrite_and_compare(tc, &moved);
    EXPECT_EQ(moved, 16u);
    EXPECT_EQ(count_ops(g, "Squeeze"), scalar ? 1u : 0u);
  }
}

TEST(HoistGather, GathersThatCannotMoveStay) {
  TailCase last_axis;  // features: normalised by the LayerNorm
  last_axis.axis = 2;
  last_axis.index = {3, 1};
  last_axis.scalar_index = false;
  TailCase read_elsewhere;  // the LayerNorm's output is also a graph output
  read_elsewhere.normed_output = true;
  TailCase softmax;  // Softmax over the token axis mixes the tokens
  softmax.softmax_tail = true;
  TailCase every_row;  // as many rows as the axis holds: nothing to save
  every_row.index = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  every_row.scalar_index = false;
  for (const TailCase& tc : {last_axis, read_elsewhere, softmax, every_row}) {
    size_t moved = 0;
    const ir::Graph g = rewrite_and_compare(tc, &moved);
    EXPECT_EQ(moved, 0u) << g.to_string();
  }
}

TEST(HoistGather, OptimizedGraphMatchesAndCanBeSwitchedOff) {
  std::map<std::string, Tensor> feeds;
  const ir::Graph original = hoisttest::tail_graph(TailCase{}, &feeds);
  const auto want = passtest::run_cpu(original, feeds);
  for (bool off : {false, true}) {
    SCOPED_TRACE(off ? "KILNRT_NO_FUSION=gather-hoist" : "default");
    if (off) setenv("KILNRT_NO_FUSION", "gather-hoist", 1);
    ir::Graph g = original;
    passes::optimize_graph(g);
    unsetenv("KILNRT_NO_FUSION");
    EXPECT_LT(max_rel_diff(passtest::run_cpu(g, feeds).at("logits"), want.at("logits")), 1e-5);
    // Hoisted, the GEMMs after the rewrite read [2, 1, E]; switched off, the block's read [2, 9, E].
    size_t small = 0, gemms = 0;
    for (const ir::Node& n : g.nodes) {
      if (n.op_type != "FusedMatMul" && n.op_type != "MatMul") continue;
      ++gemms;
      const ir::SymShape& s = g.type_of(n.inputs[0])->shape;
      small += s.size() >= 2 && s[s.size() - 2].value == 1;
    }
    EXPECT_EQ(gemms, 4u) << g.to_string();
    EXPECT_EQ(small, off ? 0u : 3u) << g.to_string();
  }
}

}  // namespace
}  // namespace kilnrt
