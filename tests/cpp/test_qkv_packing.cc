// passes/pack_qkv_projection on the CPU backend: the Q / K / V projections of one input become one GEMM
// whose output FusedAttention reads three times through q_part / k_part / v_part, for BERT's three Linear layers and
// for MultiheadAttention's packed in-projection (ViT, also batch_first); the outputs stay equal; KILNRT_NO_FUSION
// =qkv-pack keeps three GEMMs; cross-attention and projections read elsewhere are left alone. The CPU reference of
// FusedAttention with parts equals it on the parts copied out, and malformed parts fail naming the node.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_executor.h"
#include "ir/onnx_import.h"
#include "kilnrt/npy.h"
#include "passes/dead_code.h"
#include "passes/fuse_attention.h"
#include "passes/optimize.h"
#include "passes/pack_qkv_projection.h"
#include "qkv_test_util.h"
#include "split_projection_test_util.h"

namespace kilnrt {
namespace {

using attntest::Builder;
using attntest::ScopedNoFusion;
using passtest::count_ops;
using passtest::max_rel_diff;

const ir::Node* attention_node(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "FusedAttention") return &n;
  return nullptr;
}

// The packed form: one attention reading one value three times, with head parts [0, H), [H, 2H), [2H, 3H).
void expect_packed(const ir::Graph& g, int64_t axis, int64_t heads) {
  const ir::Node* a = attention_node(g);
  ASSERT_NE(a, nullptr) << g.to_string(false);
  EXPECT_EQ(a->inputs[0], a->inputs[1]);
  EXPECT_EQ(a->inputs[0], a->inputs[2]);
  EXPECT_EQ(a->attr_ints("q_part"), (std::vector<int64_t>{axis, 0, heads}));
  EXPECT_EQ(a->attr_ints("k_part"), (std::vector<int64_t>{axis, heads, heads}));
  EXPECT_EQ(a->attr_ints("v_part"), (std::vector<int64_t>{axis, 2 * heads, heads}));
  const ir::TensorType* t = g.type_of(a->inputs[0]);
  ASSERT_TRUE(t && t->has_shape);
  EXPECT_EQ(t->shape[static_cast<size_t>(axis)], ir::Dim(3 * heads));
}

TEST(QkvPacking, BertProjectionsBecomeOneGemmReadInPlace) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    Builder b;
    const ir::Graph g = attntest::bert_projected_block(b, 3, 11, 2, 8, bias);
    const auto want = passtest::run_cpu(g, b.feeds).at("y");
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    passes::infer_shapes(after);
    EXPECT_EQ(count_ops(after, "MatMul"), 1u) << after.to_string(false);
    EXPECT_EQ(count_ops(after, "Add"), bias ? 1u : 0u);
    expect_packed(after, 2, 2);
    EXPECT_EQ(count_ops(after, "Transpose"), 0u);
    const Tensor got = passtest::run_cpu(after, b.feeds).at("y");
    EXPECT_LE(max_rel_diff(got, want), 1e-5);
    // The fully masked batch entry (the last) is zeros, the others not: the guard and the parts both at work.
    const int64_t per = 11 * 16;
    double kept = 0.0, padded = 0.0;
    for (int64_t i = 0; i < per; ++i) {
      kept = std::max(kept, double(std::fabs(got.data<float>()[i])));
      padded = std::max(padded, double(std::fabs(got.data<float>()[2 * per + i])));
    }
    EXPECT_GT(kept, 0.0);
    EXPECT_EQ(padded, 0.0);
    // Through the whole optimizer: the packed GEMM takes its bias as a cuBLASLt epilogue (one FusedMatMul).
    ir::Graph opt = g;
    passes::optimize_graph(opt);
    EXPECT_EQ(count_ops(opt, "FusedMatMul") + count_ops(opt, "MatMul"), 1u) << opt.to_string(false);
    expect_packed(opt, 2, 2);
    EXPECT_LE(max_rel_diff(passtest::run_cpu(opt, b.feeds).at("y"), want), 1e-5);
  }
}

TEST(QkvPacking, SwitchedOffByNoFusion) {
  Builder b;
  const ir::Graph g = attntest::bert_projected_block(b, 2, 7, 2, 4, true);
  for (const char* list : {"qkv-pack", "gelu,qkv-pack"}) {
    ScopedNoFusion off(list);
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "MatMul"), 3u) << list;
    EXPECT_FALSE(attention_node(after)->attrs.count("q_part"));
    EXPECT_EQ(passes::pack_qkv_projections(after), 0u);
  }
  ir::Graph on = g;
  EXPECT_EQ(passes::fuse_attention(on), 1u);
  EXPECT_EQ(count_ops(on, "MatMul"), 1u);
}

TEST(QkvPacking, CrossAttentionAndSharedProjectionsAreLeftAlone) {
  {  // K and V project another input: three GEMMs stay
    Builder b;
    const ir::Graph g = attntest::bert_projected_block(b, 2, 7, 2, 4, true, "memory");
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "MatMul"), 3u);
    passes::infer_shapes(after);
    EXPECT_LE(max_rel_diff(passtest::run_cpu(after, b.feeds).at("y"), passtest::run_cpu(g, b.feeds).at("y")), 1e-5);
  }
  {  // the K projection is also a graph output (its value must exist): three GEMMs stay
    Builder b;
    ir::Graph g = attntest::bert_projected_block(b, 2, 7, 2, 4, true);
    g.outputs.push_back("xk");
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "MatMul"), 3u);
    passes::infer_shapes(after);
    const auto want = passtest::run_cpu(g, b.feeds), got = passtest::run_cpu(after, b.feeds);
    for (const char* o : {"y", "xk"}) EXPECT_LE(max_rel_diff(got.at(o), want.at(o)), 1e-5) << o;
  }
  {  // a weight that is a graph input, not a constant: left alone
    Builder b;
    ir::Graph g = attntest::bert_projected_block(b, 2, 7, 2, 4, false);
    b.feeds["xv_w"] = g.constants.at("xv_w");
    g.constants.erase("xv_w");
    g.inputs.push_back("xv_w");
    g.types["xv_w"] = g.types.at("x");
    g.types["xv_w"].shape = ir::shape_to_sym({8, 8});
    ir::Graph after = g;
    EXPECT_EQ(passes::fuse_attention(after), 1u);
    EXPECT_EQ(count_ops(after, "MatMul"), 3u);
  }
}

TEST(QkvPacking, VitInProjectionStaysOneGemm) {
  // MultiheadAttention's packed in-projection: split_packed_projection's three GEMMs are packed again after fusing.
  for (bool bias : {true, false}) {
    Builder b;
    const ir::Graph g = attntest::projected_mha_block(b, 3, 13, 2, 8, bias);
    ir::Graph opt = g;
    passes::optimize_graph(opt);
    EXPECT_EQ(count_ops(opt, bias ? "FusedMatMul" : "MatMul"), 1u) << opt.to_string(false);
    EXPECT_EQ(count_ops(opt, "Slice") + count_ops(opt, "Transpose") + count_ops(opt, "Gather"), 0u);
    expect_packed(opt, 2, 2);  // [S, B, 3H, D]
    EXPECT_LE(max_rel_diff(passtest::run_cpu(opt, b.feeds).at("y"), passtest::run_cpu(g, b.feeds).at("y")), 1e-5);
  }
  {  // batch_first (ViT's encoder): the packed in-projection and the out-projection, no transposes
    Builder b;
    const ir::Graph g = attntest::batch_first_mha_block(b, 3, 13, 2, 8);
    ir::Graph opt = g;
    passes::optimize_graph(opt);
    EXPECT_EQ(count_ops(opt, "FusedMatMul"), 2u) << opt.to_string(false);
    EXPECT_EQ(count_ops(opt, "Transpose"), 0u);
    expect_packed(opt, 2, 2);  // [B, S, 3H, D]
    EXPECT_LE(max_rel_diff(passtest::run_cpu(opt, b.feeds).at("out"), passtest::run_cpu(g, b.feeds).at("out")), 1e-5);
  }
}

TEST(QkvPacking, DynamoEncoderFixturePacksAndMatchesTorch) {
  const std::string dir = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/";
  ir::Graph g = ir::import_onnx_file(dir + "transformer_encoder_layer.onnx");
  passes::optimize_graph(g);
  const ir::Node* a = attention_node(g);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->attrs.count("q_part")) << g.to_string(false);
  EXPECT_EQ(a->inputs[0], a->inputs[2]);
  const Tensor x = load_npy(dir + "transformer_encoder_layer.input.npy");
  const Tensor want = load_npy(dir + "transformer_encoder_layer.expected.npy");
  EXPECT_LE(max_rel_diff(passtest::run_cpu(g, {{"x", x}}).at("y"), want), 1e-4);
  // One GEMM fewer per packed attention than with the packing switched off (3 -> 1).
  ScopedNoFusion off("qkv-pack");
  ir::Graph unpacked = ir::import_onnx_file(dir + "transformer_encoder_layer.onnx");
  passes::optimize_graph(unpacked);
  const auto gemms = [](const ir::Graph& h) { return count_ops(h, "FusedMatMul") + count_ops(h, "MatMul"); };
  EXPECT_EQ(gemms(unpacked), gemms(g) + 2);
}

// ---- the CPU reference with parts ---------------------------------------------------------------------------------

ir::Node attention_with_parts(int64_t axis, int64_t h) {
  ir::Node n;
  n.name = "packed_attention";
  n.op_type = "FusedAttention";
  n.domain = "com.kilnrt";
  n.inputs = {"p", "p", "p"};
  n.outputs = {"y"};
  n.attrs["scale"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["scale"].f = 0.3f;
  for (const char* perm : {"q_perm", "k_perm", "v_perm"}) {
    n.attrs[perm].kind = ir::Attribute::Kind::kInts;
    n.attrs[perm].ints = {0, 2, 1, 3};
  }
  const char* parts[3] = {"q_part", "k_part", "v_part"};
  for (int i = 0; i < 3; ++i) {
    n.attrs[parts[i]].kind = ir::Attribute::Kind::kInts;
    n.attrs[parts[i]].ints = {axis, i * h, h};
  }
  return n;
}

ir::Graph one_node_graph(ir::Node n, const std::vector<std::pair<std::string, Shape>>& inputs) {
  ir::Graph g;
  g.name = "one_node";
  g.opsets[""] = 17;
  g.opsets["com.kilnrt"] = 1;
  for (const auto& [name, shape] : inputs) passtest::add_float32_input(g, name, shape);
  g.outputs = n.outputs;
  g.nodes.push_back(std::move(n));
  passes::infer_shapes(g);
  return g;
}

TEST(QkvPacking, ReferenceWithPartsEqualsThePartsCopiedOut) {
  const int64_t B = 2, S = 9, H = 3, D = 8;
  const Tensor p = passtest::random_tensor({B, S, 3 * H, D}, 5);
  ir::Graph packed = one_node_graph(attention_with_parts(2, H), {{"p", {B, S, 3 * H, D}}});
  EXPECT_EQ(packed.type_of("y")->shape, ir::shape_to_sym({B, H, S, D}));
  // The same attention on three copied-out inputs [B, S, H, D].
  ir::Node plain = attention_with_parts(2, H);
  plain.inputs = {"q", "k", "v"};
  for (const char* a : {"q_part", "k_part", "v_part"}) plain.attrs.erase(a);
  const ir::Graph separate = one_node_graph(plain, {{"q", {B, S, H, D}}, {"k", {B, S, H, D}}, {"v", {B, S, H, D}}});
  std::map<std::string, Tensor> feeds;
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    Tensor t = Tensor::empty(DType::kFloat32, {B, S, H, D});
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t c = 0; c < H * D; ++c)
        t.data<float>()[r * H * D + c] = p.data<float>()[r * 3 * H * D + i * H * D + c];
    feeds[names[i]] = t;
  }
  const Tensor want = passtest::run_cpu(separate, feeds).at("y");
  const Tensor got = passtest::run_cpu(packed, {{"p", p}}).at("y");
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(max_rel_diff(got, want), 0.0);  // the same arithmetic on the same values
}

TEST(QkvPacking, MalformedPartsFailNamingTheNode) {
  const int64_t B = 1, S = 4, H = 2, D = 8;
  const Tensor p = passtest::random_tensor({B, S, 3 * H, D}, 6);
  struct Bad {
    std::vector<int64_t> part;
    const char* says;
  };
  for (const Bad& bad : {Bad{{2, 5, 2}, "outside"}, Bad{{2, 0}, "expected [axis, start, size]"},
                         Bad{{4, 0, 1}, "axis 4 is outside"}, Bad{{2, 0, 0}, "size >= 1"}}) {
    ir::Node n = attention_with_parts(2, H);
    n.attrs["k_part"].ints = bad.part;
    ir::Graph g;
    g.name = "bad";
    g.opsets[""] = 17;
    g.opsets["com.kilnrt"] = 1;
    passtest::add_float32_input(g, "p", {B, S, 3 * H, D});
    g.outputs = {"y"};
    g.nodes.push_back(n);
    try {
      passtest::run_cpu(g, {{"p", p}});
      ADD_FAILURE() << "no error for k_part of " << bad.part.size() << " entries: " << bad.says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("packed_attention"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.says), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kilnrt
