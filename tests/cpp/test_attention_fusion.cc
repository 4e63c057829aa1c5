// Attention and GELU fusion on the CPU backend: each pass runs on exporter-shaped graphs, and the graph
// before and after gives the same outputs; graphs the passes must leave alone are unchanged; the FusedAttention
// reference handles fully masked rows (uniform, no NaN); the committed dynamo encoder layer fuses end to end and
// still matches torch's output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>

#include "attention_test_util.h"
#include "sdpa_test_util.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_gelu.h"
#include "passes/fuse_gemm_epilogue.h"
#include "passes/fuse_layernorm.h"
#include "passes/dead_code.h"
#include "passes/optimize.h"
#include "passes/pattern_util.h"
#include "passes/select_packed_qkv.h"

using namespace kilnrt;
using namespace kilnrt::attntest;

namespace {

// Runs `pass` on a copy of `g`, expects `expected` rewrites and equal outputs; returns the rewritten graph.
template <class Pass>
ir::Graph check_pass(const ir::Graph& g, const std::map<std::string, Tensor>& feeds, Pass pass, size_t expected,
                     double tol = 1e-5) {
  ir::Graph after = g;
  EXPECT_EQ(pass(after), expected);
  passes::infer_shapes(after);
  const auto ref = run_cpu(g, feeds);
  const auto got = run_cpu(after, feeds);
  for (const std::string& o : g.outputs) EXPECT_LE(max_rel_diff(got.at(o), ref.at(o)), tol) << "output " << o;
  return after;
}

size_t attention(ir::Graph& g) { return passes::fuse_attention(g); }
size_t gelu(ir::Graph& g) { return passes::fuse_gelu(g); }

const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

}  // namespace

TEST(AttentionFusion, BertBlockWithMaskAbsorbsTransposes) {
  Builder b;
  const ir::Graph g = bert_block(b, 2, 9, 3, 8, true, -10000.f, 0.f);
  ir::Graph after = check_pass(g, b.feeds, attention, 1);
  const ir::Node* f = find_op(after, "FusedAttention");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->domain, "com.kilnrt");
  EXPECT_EQ(f->inputs, (std::vector<std::string>{"q", "k", "v", "mask"})) << "the head transposes are read in place";
  EXPECT_EQ(f->outputs[0], "y") << "the output transpose is absorbed";
  EXPECT_NEAR(f->attr_float("scale"), 1.0 / std::sqrt(8.0), 1e-7);
  EXPECT_EQ(f->attr_ints("out_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(after.opset("com.kilnrt"), 1);
  EXPECT_EQ(count_ops(after, "Softmax"), 0u);
  EXPECT_EQ(count_ops(after, "MatMul"), 0u);
  // The transposes are dead now: optimize_graph's DCE removes them.
  passes::optimize_graph(after);
  EXPECT_EQ(after.nodes.size(), 1u);
}

TEST(AttentionFusion, BertBlockWithoutMaskAndOddSizes) {
  Builder b;
  const ir::Graph g = bert_block(b, 1, 67, 2, 5, false);
  ir::Graph after = check_pass(g, b.feeds, attention, 1);
  EXPECT_EQ(find_op(after, "FusedAttention")->inputs.size(), 3u);
}

TEST(AttentionFusion, VitBlockRank3WithScaledQuery) {
  // torchvision ViT through torch 1.13: [S, B*H, D] heads; Q = Transpose(1,0,2) / c, K^T = Transpose(1,2,0),
  // V = Transpose(1,0,2); output Transpose(1,0,2).
  Builder b;
  b.input("q", {13, 6, 16});
  b.input("k", {13, 6, 16});
  b.input("v", {13, 6, 16});
  b.transpose("q", {1, 0, 2}, "qt");
  b.scal("Div", "qt", 4.f, "qs");
  b.transpose("k", {1, 2, 0}, "kt");
  b.transpose("v", {1, 0, 2}, "vt");
  b.node("MatMul", {"qs", "kt"}, "scores");
  b.softmax("scores", "p");
  b.node("MatMul", {"p", "vt"}, "ctx");
  b.transpose("ctx", {1, 0, 2}, "y");
  b.output("y");
  ir::Graph after = check_pass(b.finish(), b.feeds, attention, 1);
  const ir::Node* f = find_op(after, "FusedAttention");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->attr_float("scale"), 0.25, 1e-7);
  EXPECT_EQ(f->inputs[0], "q");
  EXPECT_EQ(f->attr_ints("k_perm"), (std::vector<int64_t>{1, 0, 2}));
}

TEST(AttentionFusion, DynamoBlockScalesBothOperandsAndTransposedKeyInput) {
  // torch 2.x dynamo: Q * s and K^T * s (s = D^-1/4), K^T arriving already transposed.
  Builder b;
  b.input("q", {4, 10, 8});
  b.input("kt", {4, 8, 12});
  b.input("v", {4, 12, 6});
  b.input("mask", {10, 12}, -3.f, 0.f);
  const float s = std::pow(8.f, -0.25f);
  b.scal("Mul", "q", s, "qs");
  b.scal("Mul", "kt", s, "ks");
  b.node("MatMul", {"qs", "ks"}, "scores");
  b.node("Add", {"mask", "scores"}, "masked");  // mask first
  b.softmax("masked", "p");
  b.node("MatMul", {"p", "v"}, "y");
  b.output("y");
  ir::Graph after = check_pass(b.finish(), b.feeds, attention, 1);
  const ir::Node* f = find_op(after, "FusedAttention");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->attr_float("scale"), s * s, 1e-6);
  EXPECT_EQ(f->inputs[1], "kt");
  EXPECT_EQ(f->attr_ints("k_perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_FALSE(f->has_attr("out_perm"));
}

TEST(AttentionFusion, DynamoSdpaKeyTransposeThroughReshapes) {
  // dynamo's SDPA on a 4-D key: K^T = Reshape(Transpose(Reshape(k, [B*H, S, D]), (0, 2, 1)), [B, H, D, S]), and
  // Q * s, K^T * s. The chain is read as k itself (no copy left), a broken chain is read through its last Reshape.
  for (bool broken : {false, true}) {
    SCOPED_TRACE(broken ? "reinterpreting Reshape" : "leading-dim merge and split");
    Builder b;
    b.input("q", {2, 3, 10, 8});
    b.input("k", {2, 3, 10, 8});
    b.input("v", {2, 3, 10, 8});
    b.input("mask", {2, 1, 10, 10}, -5.f, 0.f);
    // broken: the first Reshape reinterprets [S, D] as [D, S] (not a transpose), so the chain is no swap.
    b.constant("s1", Tensor::from_vector(broken ? std::vector<int64_t>{6, 8, 10} : std::vector<int64_t>{6, 10, 8},
                                         DType::kInt64, {3}));
    b.constant("s2", Tensor::from_vector(std::vector<int64_t>{2, 3, 8, 10}, DType::kInt64, {4}));
    b.node("Reshape", {"k", "s1"}, "k3");
    b.transpose("k3", {0, 2, 1}, "k3t");
    b.node("Reshape", {"k3t", "s2"}, "kt");
    const float sc = std::pow(8.f, -0.25f);
    b.scal("Mul", "q", sc, "qs");
    b.scal("Mul", "kt", sc, "ks");
    b.node("MatMul", {"qs", "ks"}, "scores");
    b.node("Add", {"scores", "mask"}, "masked");
    b.softmax("masked", "p");
    b.node("MatMul", {"p", "v"}, "ctx");
    b.transpose("ctx", {0, 2, 1, 3}, "y");
    b.output("y");
    ir::Graph after = check_pass(b.finish(), b.feeds, attention, 1);
    const ir::Node* f = find_op(after, "FusedAttention");
    ASSERT_NE(f, nullptr);
    if (broken) {
      EXPECT_EQ(f->inputs[1], "kt");
      EXPECT_EQ(f->attr_ints("k_perm"), (std::vector<int64_t>{0, 1, 3, 2}));
    } else {
      EXPECT_EQ(f->inputs[1], "k") << "the reshape / transpose / reshape chain is read in place";
      EXPECT_FALSE(f->has_attr("k_perm"));
      passes::optimize_graph(after);
      EXPECT_EQ(after.nodes.size(), 1u) << after.to_string(false);
    }
  }
}

TEST(AttentionFusion, FullyMaskedRowsWithLargeNegativeMask) {
  // -1e9 on every key of some rows: softmax of the (equal) scores is uniform before and after.
  Builder b;
  ir::Graph g = bert_block(b, 2, 7, 2, 4, true);
  Tensor& m = b.feeds["mask"];
  for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = i < 7 ? -1e9f : 0.f;  // batch 0 fully masked
  check_pass(g, b.feeds, attention, 1, 1e-5);
}

TEST(AttentionFusion, BertSdpaDynamoPatternWithNanGuardAndBooleanMask) {
  // transformers' BertModel (sdpa) through torch 2.x dynamo: head Reshape + Transpose, K^T through Reshape /
  // Transpose / Reshape, Q and K^T each scaled by sqrt(s), Where(bool, 0, -inf) mask, Where(IsNaN(p), 0, p) guard.
  // Batch entry 1 is padding everywhere: the guard's zeros there, before and after.
  for (bool unknown_mask_shape : {false, true}) {
    SCOPED_TRACE(unknown_mask_shape ? "mask shape unknown (GatherND-made)" : "mask shape known");
    Builder b;
    ir::Graph g = sdpa_dynamo_block(b, 3, 11, 2, 8, {1});
    if (unknown_mask_shape) {
      g.types["mask"].has_shape = false;
      g.types["mask"].shape.clear();
    }
    ir::Graph after = check_pass(g, b.feeds, attention, 1);
    const ir::Node* f = find_op(after, "FusedAttention");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->inputs, (std::vector<std::string>{"xq4", "xk4", "xv4", "mask"}))
        << "head transposes and the K^T chain are read in place";
    EXPECT_EQ(f->attr_ints("q_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(f->attr_ints("k_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(f->attr_ints("v_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(f->attr_ints("out_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_NEAR(f->attr_float("scale"), 1.0 / std::sqrt(8.0), 1e-6) << "the two sqrt(s) factors become one scale";
    EXPECT_EQ(f->attr_int("zero_masked_rows", 0), 1);
    EXPECT_EQ(count_ops(after, "IsNaN"), 0u);
    EXPECT_EQ(count_ops(after, "Where"), 1u) << "only the mask's Where is left";
    const Tensor y = run_cpu(after, b.feeds).at("y");
    ASSERT_EQ(y.shape(), (Shape{3, 11, 16}));
    const float* yp = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_FALSE(std::isnan(yp[i])) << "NaN at " << i;
    double padded = 0.0, kept = 0.0;
    for (int64_t i = 0; i < 11 * 16; ++i) {
      padded = std::max(padded, double(std::fabs(yp[11 * 16 + i])));
      kept = std::max(kept, double(std::fabs(yp[i])));
    }
    EXPECT_EQ(padded, 0.0) << "fully masked rows are zeros (the NaN guard)";
    EXPECT_GT(kept, 0.0);
    passes::optimize_graph(after);
    EXPECT_EQ(count_ops(after, "Transpose"), 0u) << after.to_string(false);
    EXPECT_EQ(count_ops(after, "Mul"), 0u);
  }
}

TEST(AttentionFusion, QueryBroadcastKeyMaskIsReadAsKeyMask) {
  // transformers 4.5x: Where(And(all-true [1, 1, S, 1], key mask [B, 1, 1, S]), 0, -inf) is a [B, 1, S, S] mask with
  // a row per query; the FusedAttention node reads Where(key mask, 0, -inf) instead ([B, 1, 1, S]), the And and the
  // [B, 1, S, S] Where are gone, and the outputs (fully masked batch entry 1 included) are unchanged.
  Builder b;
  ir::Graph g = sdpa_dynamo_block(b, 3, 11, 2, 8, {1}, /*query_and=*/true);
  ir::Graph after = check_pass(g, b.feeds, attention, 1);
  const ir::Node* f = find_op(after, "FusedAttention");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->inputs.size(), 4u);
  EXPECT_EQ(f->inputs[3], "mask/key_mask");
  const ir::SymShape* ms = passes::shape_of(after, f->inputs[3]);
  ASSERT_NE(ms, nullptr);
  ASSERT_EQ(ms->size(), 4u);
  EXPECT_TRUE((*ms)[2].known() && (*ms)[2].value == 1) << "one mask row for every query";
  EXPECT_EQ(count_ops(after, "And"), 0u);
  EXPECT_EQ(count_ops(after, "Where"), 1u) << "only the narrowed mask's Where is left";
  // Not an all-true constant (one false element): the mask keeps its row per query.
  Builder b2;
  ir::Graph g2 = sdpa_dynamo_block(b2, 3, 11, 2, 8, {1}, /*query_and=*/true);
  static_cast<uint8_t*>(g2.constants.at("query_true").raw())[4] = 0;
  ir::Graph after2 = check_pass(g2, b2.feeds, attention, 1);
  const ir::Node* f2 = find_op(after2, "FusedAttention");
  ASSERT_NE(f2, nullptr);
  ASSERT_EQ(f2->inputs.size(), 4u);
  EXPECT_EQ(f2->inputs[3], "mask");
  EXPECT_EQ(count_ops(after2, "And"), 1u);
  // KILNRT_NO_FUSION=attention-mask: fused, the mask left as it is.
  setenv("KILNRT_NO_FUSION", "attention-mask", 1);
  Builder b3;
  ir::Graph g3 = sdpa_dynamo_block(b3, 3, 11, 2, 8, {1}, /*query_and=*/true);
  ir::Graph after3 = check_pass(g3, b3.feeds, attention, 1);
  unsetenv("KILNRT_NO_FUSION");
  const ir::Node* f3 = find_op(after3, "FusedAttention");
  ASSERT_NE(f3, nullptr);
  ASSERT_EQ(f3->inputs.size(), 4u);
  EXPECT_EQ(f3->inputs[3], "mask");
}

TEST(AttentionFusion, VitMultiheadAttentionHeadSplitIsReadInPlace) {
  // The head split Reshape -> Transpose(1, 0, 2) -> Reshape of Q, K and V becomes a Reshape view of the Gather's
  // [S, B, E] output read with perm (1, 2, 0, 3): no Transpose copy is left.
  // packed: from the in-projection's [S, B, 3E] output, the Gathers become Slices (select_packed_qkv) first.
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed projection" : "q / k / v picked from an input");
    Builder b;
    const ir::Graph g = mha_dynamo_block(b, 3, 13, 2, 8, packed);
    ir::Graph after = check_pass(g, b.feeds, attention, 1);
    const ir::Node* f = find_op(after, "FusedAttention");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->inputs, (std::vector<std::string>{"q_4/heads", "k_4/heads", "v_4/heads"}));
    for (const char* a : {"q_perm", "k_perm", "v_perm"})
      EXPECT_EQ(f->attr_ints(a), (std::vector<int64_t>{1, 2, 0, 3})) << a;
    EXPECT_EQ(f->attr_ints("out_perm"), (std::vector<int64_t>{2, 0, 1, 3}));
    EXPECT_NEAR(f->attr_float("scale"), 1.0 / std::sqrt(8.0), 1e-6);
    passes::optimize_graph(after);
    EXPECT_EQ(count_ops(after, "Transpose"), 0u) << after.to_string(false);
    EXPECT_EQ(count_ops(after, "Gather"), packed ? 0u : 3u);
    const auto ref = run_cpu(g, b.feeds);
    EXPECT_LE(max_rel_diff(run_cpu(after, b.feeds).at("y"), ref.at("y")), 1e-5);
  }
  {  // a head split whose Transpose is not (1, 0, 2) keeps its copy
    Builder b2;
    ir::Graph g2 = mha_dynamo_block(b2, 2, 4, 2, 2);  // B = H = 2, S = 4, D = 2: shapes alone cannot tell
    for (ir::Node& n : g2.nodes)
      if (n.outputs[0] == "v_t") n.attrs["perm"].ints = {1, 2, 0};
    g2.constants["v_s4"] = shape_const({2, 2, 4, 2});
    ir::Graph after2 = check_pass(g2, b2.feeds, attention, 1);
    EXPECT_EQ(find_op(after2, "FusedAttention")->inputs[2], "v_4");
  }
}

TEST(AttentionFusion, PackedProjectionSelectsBecomeSlices) {
  // torch's in-projection split: Reshape -> Unsqueeze(0) -> Transpose(3, 1, 2, 0, 4) -> Squeeze(-2) -> Gather(0 / 1 /
  // -1): three Slices of the projection, the Transpose copy dead.
  {
    Builder b;
    packed_projection(b, "p", "x", 5, 2, 8);
    for (int64_t i : {0, 1, -1}) {
      const std::string o = "sel" + std::to_string(i);
      b.node("Gather", {"x", b.constant(o + "_i", Tensor::from_vector(std::vector<int64_t>{i}, DType::kInt64, {}))}, o);
      b.output(o);
    }
    ir::Graph after = check_pass(b.finish(), b.feeds, passes::select_packed_qkv, 3);
    passes::eliminate_dead_code(after);
    EXPECT_EQ(count_ops(after, "Gather"), 0u);
    EXPECT_EQ(count_ops(after, "Transpose"), 0u) << after.to_string(false);
    EXPECT_EQ(count_ops(after, "Slice"), 3u);
    EXPECT_EQ(after.type_of("sel-1")->shape, ir::shape_to_sym({5, 2, 8}));
  }
  {  // the other axes change order (Transpose(3, 2, 1, 0, 4)): a real transpose is needed, left alone
    Builder b;
    packed_projection(b, "p", "x", 5, 2, 8, {3, 2, 1, 0, 4});
    b.node("Gather", {"x", b.constant("i", Tensor::from_vector(std::vector<int64_t>{1}, DType::kInt64, {}))}, "y");
    b.output("y");
    check_pass(b.finish(), b.feeds, passes::select_packed_qkv, 0);
  }
  {  // another reader of the chain's end (the Transpose stays needed), and a 1-D index: left alone
    for (bool other_reader : {true, false}) {
      Builder b;
      packed_projection(b, "p", "x", 5, 2, 8);
      b.node("Gather",
             {"x", b.constant("i", Tensor::from_vector(std::vector<int64_t>{1}, DType::kInt64,
                                                       other_reader ? Shape{} : Shape{1}))},
             "y");
      b.output("y");
      if (other_reader) b.node("Neg", {"x"}, "z"), b.output("z");
      check_pass(b.finish(), b.feeds, passes::select_packed_qkv, 0);
    }
  }
}

TEST(AttentionFusion, SdpaGuardLookalikesAreLeftAlone) {
  {  // the guard writes 0.5, not 0
    Builder b;
    ir::Graph g = sdpa_dynamo_block(b, 2, 5, 2, 4);
    g.constants["guard_zero"] = scalar(0.5f);
    check_pass(g, b.feeds, attention, 0);
  }
  {  // the guard's Where selects the other way round: Where(IsNaN(p), p, 0)
    Builder b;
    ir::Graph g = sdpa_dynamo_block(b, 2, 5, 2, 4);
    for (ir::Node& n : g.nodes)
      if (n.op_type == "Where" && n.inputs[0] == "p_nan") std::swap(n.inputs[1], n.inputs[2]);
    check_pass(g, b.feeds, attention, 0);
  }
  {  // the probabilities have a third reader (a graph output)
    Builder b;
    ir::Graph g = sdpa_dynamo_block(b, 2, 5, 2, 4);
    g.outputs.push_back("p");
    check_pass(g, b.feeds, attention, 0);
  }
}

TEST(AttentionFusion, LeavesOtherGraphsAlone) {
  {  // the probabilities are a graph output too
    Builder b;
    ir::Graph g = bert_block(b, 1, 5, 2, 4, true);
    g.outputs.push_back("probs");
    EXPECT_EQ(passes::fuse_attention(g), 0u);
  }
  {  // softmax over another axis
    Builder b;
    b.input("q", {2, 5, 4});
    b.input("kt", {2, 4, 5});
    b.input("v", {2, 5, 4});
    b.node("MatMul", {"q", "kt"}, "s");
    b.softmax("s", "p", 1);
    b.node("MatMul", {"p", "v"}, "y");
    b.output("y");
    ir::Graph g = b.finish();
    EXPECT_EQ(passes::fuse_attention(g), 0u);
  }
  {  // the scores feed a second consumer
    Builder b;
    b.input("q", {2, 5, 4});
    b.input("kt", {2, 4, 5});
    b.input("v", {2, 5, 4});
    b.node("MatMul", {"q", "kt"}, "s");
    b.softmax("s", "p");
    b.node("MatMul", {"p", "v"}, "y");
    b.node("Relu", {"s"}, "r");
    b.output("y");
    b.output("r");
    ir::Graph g = b.finish();
    EXPECT_EQ(passes::fuse_attention(g), 0u);
  }
  {  // the mask would broadcast the scores to a larger shape
    Builder b;
    b.input("q", {1, 5, 4});
    b.input("kt", {1, 4, 5});
    b.input("v", {1, 5, 4});
    b.input("mask", {3, 5, 5});
    b.node("MatMul", {"q", "kt"}, "s");
    b.node("Add", {"s", "mask"}, "m");
    b.softmax("m", "p");
    b.node("MatMul", {"p", "v"}, "y");
    b.output("y");
    ir::Graph g = b.finish();
    EXPECT_EQ(passes::fuse_attention(g), 0u);
  }
  {  // head size above the CUDA kernel's 128: left to MatMul / Softmax
    Builder b;
    ir::Graph g = bert_block(b, 1, 4, 1, 160, false);
    EXPECT_EQ(passes::fuse_attention(g), 0u);
  }
  {  // KILNRT_NO_FUSION=attention
    Builder b;
    ir::Graph g = bert_block(b, 1, 5, 2, 4, false);
    setenv("KILNRT_NO_FUSION", "gelu,attention", 1);
    EXPECT_EQ(passes::fuse_attention(g), 0u);
    unsetenv("KILNRT_NO_FUSION");
  }
}

TEST(AttentionFusion, ReferenceFullyMaskedRowIsUniformWithoutNaN) {
  ir::Graph g;
  g.name = "direct";
  g.opsets[""] = 17;
  g.opsets["com.kilnrt"] = 1;
  Builder b;
  b.input("q", {1, 3, 4});
  b.input("k", {1, 5, 4});
  b.input("v", {1, 5, 2});
  b.input("mask", {3, 5});
  Tensor& m = b.feeds["mask"];
  const float inf = std::numeric_limits<float>::infinity();
  for (int j = 0; j < 5; ++j) m.data<float>()[5 + j] = -inf;  // row 1 fully masked
  m.data<float>()[10] = -inf;                                 // row 2: one key masked
  ir::Node& n = b.node("FusedAttention", {"q", "k", "v", "mask"}, "y");
  n.domain = "com.kilnrt";
  b.g.opsets["com.kilnrt"] = 1;
  b.output("y");
  const auto out = run_cpu(b.finish(), b.feeds);
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.shape(), (Shape{1, 3, 2}));
  const float* v = b.feeds["v"].data<float>();
  for (int c = 0; c < 2; ++c) {
    double mean = 0;
    for (int j = 0; j < 5; ++j) mean += v[j * 2 + c] / 5.0;
    EXPECT_NEAR(y.data<float>()[2 + c], mean, 1e-6) << "fully masked row -> mean of V";
  }
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_FALSE(std::isnan(y.data<float>()[i]));
}

TEST(AttentionFusion, ReferenceRejectsMismatchedShapesNamingTheNode) {
  Builder b;
  b.input("q", {2, 3, 4});
  b.input("k", {2, 5, 6});
  b.input("v", {2, 5, 2});
  ir::Node& n = b.node("FusedAttention", {"q", "k", "v"}, "y");
  n.domain = "com.kilnrt";
  n.name = "attn_bad";
  b.g.opsets["com.kilnrt"] = 1;
  b.output("y");
  try {
    run_cpu(b.finish(), b.feeds);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attn_bad"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("head sizes differ"), std::string::npos) << e.what();
  }
}

// ---- GELU -----------------------------------------------------------------------------------------------------
TEST(GeluFusion, ErfFormInAllThreeArrangements) {
  for (int arrangement = 0; arrangement < 3; ++arrangement) {
    SCOPED_TRACE(arrangement);
    Builder b;
    b.input("x", {3, 37}, -4.f, 4.f);
    if (arrangement == 1)
      b.scal("Mul", "x", 1.f / std::sqrt(2.f), "d");
    else
      b.scal("Div", "x", std::sqrt(2.f), "d");
    b.node("Erf", {"d"}, "e");
    b.scal("Add", "e", 1.f, "u");
    if (arrangement == 0) {  // (x * u) * 0.5: torch 1.13
      b.node("Mul", {"x", "u"}, "xu");
      b.scal("Mul", "xu", 0.5f, "y");
    } else if (arrangement == 1) {  // (x * 0.5) * u
      b.scal("Mul", "x", 0.5f, "xh");
      b.node("Mul", {"xh", "u"}, "y");
    } else {  // (u * 0.5) * x
      b.scal("Mul", "u", 0.5f, "uh");
      b.node("Mul", {"uh", "x"}, "y");
    }
    b.node("Relu", {"x"}, "other");  // x has other readers: that is fine
    b.output("y");
    b.output("other");
    ir::Graph after = check_pass(b.finish(), b.feeds, gelu, 1);
    const ir::Node* f = find_op(after, "Gelu");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->domain, "com.kilnrt");
    EXPECT_EQ(f->attr_string("approximate"), "none");
    EXPECT_EQ(count_ops(after, "Erf"), 0u);
  }
}

TEST(GeluFusion, TanhFormWithPowAndWithProducts) {
  for (bool pow : {true, false}) {
    SCOPED_TRACE(pow ? "Pow" : "x*x*x");
    Builder b;
    b.input("x", {2, 50}, -5.f, 5.f);
    if (pow) {
      b.constant("three", scalar(3.f));
      b.node("Pow", {"x", "three"}, "x3");
    } else {
      b.node("Mul", {"x", "x"}, "x2");
      b.node("Mul", {"x", "x2"}, "x3");
    }
    b.scal("Mul", "x3", 0.044715f, "c3");
    b.node("Add", {"x", "c3"}, "inner");
    b.scal("Mul", "inner", std::sqrt(2.f / float(M_PI)), "arg");
    b.node("Tanh", {"arg"}, "t");
    b.scal("Add", "t", 1.f, "u");
    b.node("Mul", {"x", "u"}, "xu");
    b.scal("Mul", "xu", 0.5f, "y");
    b.output("y");
    ir::Graph after = check_pass(b.finish(), b.feeds, gelu, 1);
    ASSERT_EQ(after.nodes.size(), 1u) << "everything but the Gelu is erased";
    EXPECT_EQ(after.nodes[0].attr_string("approximate"), "tanh");
  }
}

TEST(GeluFusion, WrongConstantsAreLeftAlone) {
  Builder b;
  b.input("x", {8});
  b.scal("Div", "x", 1.5f, "d");  // not sqrt(2)
  b.node("Erf", {"d"}, "e");
  b.scal("Add", "e", 1.f, "u");
  b.node("Mul", {"x", "u"}, "xu");
  b.scal("Mul", "xu", 0.5f, "y");
  b.output("y");
  ir::Graph g = b.finish();
  EXPECT_EQ(passes::fuse_gelu(g), 0u);
}

// ---- GEMM epilogues ------------------------------------------------------------------------------------------
TEST(GemmEpilogueFusion, MatMulBiasGeluAndGemmBias) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    Builder b;
    b.input("x", {2, 5, 12}, -2.f, 2.f);
    b.constant("w", random_tensor({12, 7}, 3));
    b.constant("wt", random_tensor({7, 12}, 4));
    b.constant("bias", random_tensor({7}, 5));
    std::string y = "y";
    size_t left = 1;
    if (variant == 0) {  // torch 1.13 Linear: Add(bias, MatMul)
      b.node("MatMul", {"x", "w"}, "mm");
      b.node("Add", {"bias", "mm"}, "y");
    } else if (variant == 1) {  // + fused GELU
      b.node("MatMul", {"x", "w"}, "mm");
      b.node("Add", {"mm", "bias"}, "lin");
      ir::Node& g = b.node("Gelu", {"lin"}, "y");
      g.domain = "com.kilnrt";
      b.g.opsets["com.kilnrt"] = 1;
    } else if (variant == 2) {  // Gemm(transB) with bias, then tanh GELU
      b.input("x2", {10, 12});
      ir::Node& gm = b.node("Gemm", {"x2", "wt", "bias"}, "lin");
      gm.attrs["transB"].kind = ir::Attribute::Kind::kInt;
      gm.attrs["transB"].i = 1;
      ir::Node& g = b.node("Gelu", {"lin"}, "y");
      g.domain = "com.kilnrt";
      g.attrs["approximate"].kind = ir::Attribute::Kind::kString;
      g.attrs["approximate"].s = "tanh";
      b.g.opsets["com.kilnrt"] = 1;
    } else {  // the weights are an input: left alone
      b.input("wi", {12, 7});
      b.node("MatMul", {"x", "wi"}, "mm");
      b.node("Add", {"mm", "bias"}, "y");
      left = 0;
    }
    b.output(y);
    ir::Graph after = check_pass(b.finish(), b.feeds, passes::fuse_gemm_epilogues, left, 1e-5);
    EXPECT_EQ(count_ops(after, "FusedMatMul"), left);
    if (left) EXPECT_EQ(after.nodes.size(), 1u);
  }
}

TEST(GemmEpilogueFusion, OnnxGelu20AfterMatMulBias) {
  // torch 2.x dynamo at opset >= 20 writes nn.GELU as ONNX Gelu (domain ""), both approximations.
  for (const char* approx : {"none", "tanh"}) {
    SCOPED_TRACE(approx);
    Builder b(20);
    b.input("x", {2, 5, 12}, -2.f, 2.f);
    b.constant("w", random_tensor({12, 7}, 3));
    b.constant("bias", random_tensor({7}, 5));
    b.node("MatMul", {"x", "w"}, "mm");
    b.node("Add", {"mm", "bias"}, "lin");
    ir::Node& g = b.node("Gelu", {"lin"}, "y");
    g.attrs["approximate"].kind = ir::Attribute::Kind::kString;
    g.attrs["approximate"].s = approx;
    b.output("y");
    ir::Graph after = check_pass(b.finish(), b.feeds, passes::fuse_gemm_epilogues, 1, 1e-5);
    ASSERT_EQ(after.nodes.size(), 1u);
    const ir::Node& f = after.nodes[0];
    EXPECT_EQ(f.op_type, "FusedMatMul");
    EXPECT_EQ(f.attr_string("activation", std::string()), "gelu");
    EXPECT_EQ(f.attr_string("approximate", std::string()), approx);
  }
  {  // a Gelu whose input has another reader keeps its own node (the MatMul + bias still fuse)
    Builder b(20);
    b.input("x", {4, 12});
    b.constant("w", random_tensor({12, 7}, 3));
    b.constant("bias", random_tensor({7}, 5));
    b.node("MatMul", {"x", "w"}, "mm");
    b.node("Add", {"mm", "bias"}, "lin");
    b.node("Gelu", {"lin"}, "y");
    b.output("y");
    b.output("lin");
    ir::Graph after = check_pass(b.finish(), b.feeds, passes::fuse_gemm_epilogues, 1, 1e-5);
    EXPECT_EQ(count_ops(after, "Gelu"), 1u);
  }
}

TEST(GemmEpilogueFusion, ResidualAddBecomesTheGemmC) {
  // BERT's dense -> + input_tensor (before LayerNorm): Add(Linear(x), r) with r of the output's shape.
  for (int variant = 0; variant < 5; ++variant) {
    SCOPED_TRACE(variant);
    Builder b;
    b.input("x", {2, 5, 12}, -2.f, 2.f);
    b.input("r", variant == 3 ? Shape{1, 5, 7} : Shape{2, 5, 7});
    b.constant("w", random_tensor({12, 7}, 3));
    b.constant("bias", random_tensor({7}, 5));
    b.node("MatMul", {"x", "w"}, "mm");
    std::string lin = "mm";
    if (variant != 2) lin = b.node("Add", {"bias", "mm"}, "lin").outputs[0];
    if (variant == 4) {  // GELU first: the residual stays a separate Add
      ir::Node& g = b.node("Gelu", {lin}, "act");
      g.domain = "com.kilnrt";
      b.g.opsets["com.kilnrt"] = 1;
      lin = "act";
    }
    if (variant == 1)
      b.node("Add", {"r", lin}, "y");  // residual first
    else
      b.node("Add", {lin, "r"}, "y");
    b.output("y");
    ir::Graph after = check_pass(b.finish(), b.feeds, passes::fuse_gemm_epilogues, 1, 1e-5);
    const ir::Node* f = find_op(after, "FusedMatMul");
    ASSERT_NE(f, nullptr);
    const bool fused = variant <= 2;  // 3: r broadcasts (a [1, 5, 7] skip), 4: after the activation
    EXPECT_EQ(count_ops(after, "Add"), fused ? 0u : 1u);
    if (fused) {
      ASSERT_EQ(f->inputs.size(), 4u);
      EXPECT_EQ(f->inputs[2], variant == 2 ? "" : "bias");
      EXPECT_EQ(f->inputs[3], "r");
      EXPECT_EQ(f->outputs[0], "y");
    }
  }
}

// ---- decomposed LayerNorm (exports below opset 17) ----------------------------------------------------------
namespace {
ir::Graph decomposed_layernorm(Builder& b, bool pow, int affine, int64_t axis = -1) {
  b.input("x", {3, 5, 16}, -3.f, 5.f);
  ir::Attribute axes;
  axes.kind = ir::Attribute::Kind::kInts;
  axes.ints = {axis};
  b.node("ReduceMean", {"x"}, "mean").attrs["axes"] = axes;
  b.node("Sub", {"x", "mean"}, "d");
  if (pow) {
    b.constant("two", scalar(2.f));
    b.node("Pow", {"d", "two"}, "d2");
  } else {
    b.node("Mul", {"d", "d"}, "d2");
  }
  b.node("ReduceMean", {"d2"}, "var").attrs["axes"] = axes;
  b.scal("Add", "var", 1e-5f, "ve");
  b.node("Sqrt", {"ve"}, "sd");
  b.node("Div", {"d", "sd"}, affine ? "n" : "y");
  if (affine >= 1) {
    b.constant("gamma", random_tensor({16}, 21, 0.5f, 1.5f));
    b.node("Mul", {"n", "gamma"}, affine == 2 ? "ng" : "y");
  }
  if (affine == 2) {
    b.constant("beta", random_tensor({16}, 22));
    b.node("Add", {"ng", "beta"}, "y");
  }
  b.output("y");
  return b.finish();
}
}  // namespace

TEST(LayerNormFusion, TorchOpset14PatternWithAndWithoutAffine) {
  for (int affine = 0; affine < 3; ++affine) {
    for (bool pow : {true, false}) {
      SCOPED_TRACE(std::to_string(affine) + (pow ? " Pow" : " Mul"));
      Builder b(14);
      const ir::Graph g = decomposed_layernorm(b, pow, affine);
      ir::Graph after = check_pass(g, b.feeds, passes::fuse_layernorm, 1, 1e-5);
      ASSERT_EQ(after.nodes.size(), 1u) << after.to_string(false);
      EXPECT_EQ(after.nodes[0].op_type, "LayerNormalization");
      EXPECT_EQ(after.nodes[0].domain, "com.kilnrt");
      EXPECT_EQ(after.nodes[0].inputs.size(), size_t(1 + affine));
      EXPECT_NEAR(after.nodes[0].attr_float("epsilon"), 1e-5, 1e-12);
    }
  }
}

TEST(LayerNormFusion, OtherAxisIsLeftAlone) {
  Builder b(14);
  ir::Graph g = decomposed_layernorm(b, true, 2, 1);
  EXPECT_EQ(passes::fuse_layernorm(g), 0u);
}

// ---- end to end -------------------------------------------------------------------------------------------------
TEST(AttentionFusion, DynamoEncoderLayerFusesAndMatchesTorch) {
  const std::string dir = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/";
  ir::Graph g = ir::import_onnx_file(dir + "transformer_encoder_layer.onnx");
  passes::optimize_graph(g);
  EXPECT_EQ(count_ops(g, "FusedAttention"), 1u) << g.to_string(false);
  EXPECT_EQ(count_ops(g, "Softmax"), 0u);
  // batch_first MultiheadAttention (dynamic batch): no Slice / Gather / Transpose copies are left (select_packed_qkv,
  // split_packed_projection, batch_first_attention), and the output keeps its symbolic batch dim.
  EXPECT_EQ(count_ops(g, "Transpose") + count_ops(g, "Slice") + count_ops(g, "Gather"), 0u) << g.to_string(false);
  EXPECT_EQ(g.type_of("y")->shape[0].param, "batch");
  EXPECT_FALSE(g.type_of("y")->shape[0].known());
  const Tensor x = load_npy(dir + "transformer_encoder_layer.input.npy");
  const Tensor want = load_npy(dir + "transformer_encoder_layer.expected.npy");
  const auto got = run_cpu(g, {{"x", x}});
  EXPECT_LE(max_rel_diff(got.at("y"), want), 1e-4);
  // The builder's float32 CUDA setting keeps MatMul + Softmax; the other fusions still run.
  ir::Graph plain = ir::import_onnx_file(dir + "transformer_encoder_layer.onnx");
  passes::OptimizeOptions no_attention;
  no_attention.fuse_attention = false;
  passes::optimize_graph(plain, no_attention);
  EXPECT_EQ(count_ops(plain, "FusedAttention"), 0u);
  EXPECT_EQ(count_ops(plain, "Softmax"), 1u);
  EXPECT_LE(max_rel_diff(run_cpu(plain, {{"x", x}}).at("y"), want), 1e-4);
}

TEST(AttentionFusion, BuilderKeepsAttentionFusionForCpuEngines) {
  const std::string dir = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/";
  const std::vector<uint8_t> bytes = build_engine(dir + "transformer_encoder_layer.onnx");
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  size_t fused = 0;
  for (const LayerInfo& l : engine->layers()) fused += l.op_type == "FusedAttention";
  EXPECT_EQ(fused, 1u);
  const Tensor x = load_npy(dir + "transformer_encoder_layer.input.npy");
  const Tensor want = load_npy(dir + "transformer_encoder_layer.expected.npy");
  EXPECT_LE(max_rel_diff(engine->create_context()->run({{"x", x}}).at("y"), want), 1e-4);
}
