// passes/simplify_constants on the CPU backend: constants narrowed to their distinct slices, constant adds
// combined, identity GatherNDs made Reshapes; outputs equal the unrewritten graph's, and graphs the rewrites must
// leave alone keep their shape and values.
#include <gtest/gtest.h>

#include <cstdlib>

#include "pass_test_util.h"
#include "passes/dead_code.h"
#include "passes/pattern_util.h"
#include "passes/shape_inference.h"
#include "passes/simplify_constants.h"

namespace kilnrt {
namespace {

using passtest::count_ops;
using passtest::max_rel_diff;
using passtest::random_tensor;

// BERT's embeddings as the dynamo export folds them: y = (x + T) + P, T a [B, S, E] constant of one repeated row
// (the token-type embedding of all-zero ids), P [1, S, E] (the position embeddings).
ir::Graph embedding_graph(int64_t b, int64_t s, int64_t e, bool x_batch, bool vary_t) {
  ir::Graph g;
  g.opsets[""] = 17;
  passtest::add_float32_input(g, "x", {x_batch ? b : 1, s, e});
  Tensor row = random_tensor({e}, 7);
  Tensor t = Tensor::empty(DType::kFloat32, {b, s, e});
  for (int64_t i = 0; i < b * s; ++i)
    for (int64_t k = 0; k < e; ++k) t.data<float>()[i * e + k] = row.data<float>()[k];
  if (vary_t)  // the last batch entry has another row (the same in all of its positions)
    for (int64_t r = 0; r < s; ++r) t.data<float>()[((b - 1) * s + r) * e + 2] += 1.f;
  g.constants["T"] = t;
  g.constants["P"] = random_tensor({1, s, e}, 8);
  g.nodes.push_back(passes::make_node("add_t", "Add", {"x", "T"}, "a"));
  g.nodes.push_back(passes::make_node("add_p", "Add", {"a", "P"}, "y"));
  g.outputs = {"y"};
  passes::infer_shapes(g);
  return g;
}

// Runs simplify_constants on a copy; checks equal outputs and output shapes; returns the rewritten graph.
ir::Graph simplify_and_compare(const ir::Graph& before, size_t* changed) {
  ir::Graph after = before;
  *changed = passes::simplify_constants(after);
  passes::eliminate_dead_code(after);
  passes::infer_shapes(after);
  const auto feeds = passtest::random_feeds(before, 11);
  const auto want = passtest::run_cpu(before, feeds);
  const auto got = passtest::run_cpu(after, feeds);
  for (const auto& [name, t] : want) {
    EXPECT_EQ(got.at(name).shape(), t.shape()) << name;
    EXPECT_LT(max_rel_diff(got.at(name), t), 1e-6) << name;
  }
  return after;
}

// The constant operand of the graph's one Add that reads "x".
const Tensor* constant_added_to_x(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "Add" && n.inputs[0] == "x" && g.is_constant(n.inputs[1])) return &g.constants.at(n.inputs[1]);
  return nullptr;
}

TEST(SimplifyConstants, RepeatedRowConstantAndPositionsBecomeOneSmallAdd) {
  size_t changed = 0;
  const ir::Graph after = simplify_and_compare(embedding_graph(3, 5, 4, true, false), &changed);
  EXPECT_GE(changed, 2u);
  EXPECT_EQ(count_ops(after, "Add"), 1u) << after.to_string(false);
  const Tensor* c = constant_added_to_x(after);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->shape(), (Shape{1, 5, 4})) << "T + P, T kept as one row";
}

TEST(SimplifyConstants, NarrowsOnlyAxesWithEqualSlicesThatTheOtherOperandKeeps) {
  size_t changed = 0;
  // The last batch entry of T differs: the batch axis stays, the sequence axis (equal rows) goes.
  ir::Graph g = embedding_graph(3, 5, 4, true, true);
  ASSERT_EQ(passes::narrow_broadcast_constants(g), 1u);
  for (const ir::Node& n : g.nodes)
    if (n.name == "add_t") EXPECT_EQ(g.constants.at(n.inputs[1]).shape(), (Shape{3, 1, 4}));
  simplify_and_compare(embedding_graph(3, 5, 4, true, true), &changed);
  // x has batch 1: T's batch axis makes the result's, so it must stay (the constant is only narrowed along S).
  ir::Graph h = embedding_graph(3, 5, 4, false, false);
  ASSERT_EQ(passes::narrow_broadcast_constants(h), 1u);
  for (const ir::Node& n : h.nodes)
    if (n.name == "add_t") EXPECT_EQ(h.constants.at(n.inputs[1]).shape(), (Shape{3, 1, 4}));
  simplify_and_compare(embedding_graph(3, 5, 4, false, false), &changed);
}

TEST(SimplifyConstants, VectorsAlongTheLastAxisKeepTheirShape) {
  // A LayerNorm-style scale of equal elements ([E] or [1, E]) is not narrowed: the patterns read it per channel.
  ir::Graph g;
  g.opsets[""] = 17;
  passtest::add_float32_input(g, "x", {2, 6});
  Tensor ones = Tensor::empty(DType::kFloat32, {6});
  for (int i = 0; i < 6; ++i) ones.data<float>()[i] = 1.f;
  g.constants["gamma"] = ones;
  g.constants["beta"] = Tensor::zeros(DType::kFloat32, {1, 6});
  g.nodes.push_back(passes::make_node("mul", "Mul", {"x", "gamma"}, "m"));
  g.nodes.push_back(passes::make_node("sub", "Sub", {"m", "beta"}, "y"));
  g.outputs = {"y"};
  passes::infer_shapes(g);
  EXPECT_EQ(passes::narrow_broadcast_constants(g), 0u);
  EXPECT_EQ(passes::combine_constant_adds(g), 0u) << "a Sub is not combined";
}

// m [b, s] read through GatherND with constant indices [b, 1, 1, s, 2] (transformers' SDPA mask indexing).
ir::Graph gathernd_graph(int64_t b, int64_t s, bool swap_two) {
  ir::Graph g;
  g.opsets[""] = 17;
  passtest::add_float32_input(g, "m", {b, s});
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t k = 0; k < s; ++k) idx.insert(idx.end(), {i, k});
  if (swap_two) std::swap(idx[1], idx[3]);  // (0, 1) and (0, 0): a permutation, not the identity
  g.constants["idx"] = Tensor::from_vector(idx, DType::kInt64, {b, 1, 1, s, 2});
  g.nodes.push_back(passes::make_node("gnd", "GatherND", {"m", "idx"}, "y"));
  g.outputs = {"y"};
  passes::infer_shapes(g);
  return g;
}

TEST(SimplifyConstants, IdentityGatherNdIsAReshape) {
  size_t changed = 0;
  const ir::Graph after = simplify_and_compare(gathernd_graph(3, 7, false), &changed);
  EXPECT_EQ(changed, 1u);
  EXPECT_EQ(count_ops(after, "GatherND"), 0u);
  EXPECT_EQ(count_ops(after, "Reshape"), 1u);
  const ir::Graph kept = simplify_and_compare(gathernd_graph(3, 7, true), &changed);
  EXPECT_EQ(changed, 0u);
  EXPECT_EQ(count_ops(kept, "GatherND"), 1u);
}

TEST(SimplifyConstants, SwitchedOffByNoFusionConstants) {
  setenv("KILNRT_NO_FUSION", "constants", 1);
  ir::Graph g = embedding_graph(3, 5, 4, true, false);
  ir::Graph h = gathernd_graph(2, 3, false);
  const size_t n = passes::simplify_constants(g) + passes::simplify_constants(h);
  unsetenv("KILNRT_NO_FUSION");
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(count_ops(g, "Add"), 2u);
  EXPECT_EQ(count_ops(h, "GatherND"), 1u);
}

}  // namespace
}  // namespace kilnrt
