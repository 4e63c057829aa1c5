// The input-activation move (passes/move_input_activation.h): a 1x1 FusedConv's SiLU / HardSwish / ...
// moved into the depthwise convolution reading its output as FusedConv's input_activation. Where it fires and where
// it must not, the CPU reference of the rewritten graph against the original graph (every activation the pass moves,
// HardSigmoid / Sigmoid included: act(0) != 0, so the zero padding must stay zero), the attribute's errors, and a
// CPU engine built from an ONNX file with and without the move (the attribute survives the engine file). The move
// is opt-in (KILNRT_INPUT_ACT=1): the tests turn it on.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "conv_fusion_test_util.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#include "ops/nn/fused_conv/fused_conv.h"
#include "passes/fuse_conv_epilogue.h"
#include "passes/move_input_activation.h"
#include "passes/optimize.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

// The move is opt-in (KILNRT_INPUT_ACT=1, passes/move_input_activation.h): on for one test.
struct OptIn {
  explicit OptIn(const char* v = "1") { setenv("KILNRT_INPUT_ACT", v, 1); }
  ~OptIn() { unsetenv("KILNRT_INPUT_ACT"); }
};

// Appends activation `act` ("" none; Silu as x * Sigmoid(x); Clip 0..6; LeakyRelu 0.1; Gelu opset 20) to `x`.
std::string activation(GraphBuilder& b, const std::string& x, const std::string& act, const std::string& out) {
  if (act.empty()) return x;
  if (act == "Silu") {
    b.node("Sigmoid", {x}, {out + "_sig"});
    b.node("Mul", {x, out + "_sig"}, {out});
  } else if (act == "Clip") {
    b.constant(out + "_lo", Tensor::from_vector(std::vector<float>{0.f}, DType::kFloat32, {}));
    b.constant(out + "_hi", Tensor::from_vector(std::vector<float>{6.f}, DType::kFloat32, {}));
    b.node("Clip", {x, out + "_lo", out + "_hi"}, {out});
  } else {
    ir::Node& n = b.node(act, {x}, {out});
    if (act == "LeakyRelu") n.attrs["alpha"] = float_attr(0.1f);
  }
  return out;
}

// An efficientnet-style block: expand 1x1 (bias, act) -> depthwise k x k (bias, dw_act) -> squeeze-excite (1x1
// convs with SiLU and Sigmoid) -> project 1x1 -> + x. Input [2, c, h, w].
ir::Graph block(const std::string& act, const std::string& dw_act = "Silu", int64_t k = 3, int64_t stride = 1,
                int64_t c = 8, int64_t h = 9, int64_t w = 10) {
  GraphBuilder b(20);
  b.input("x", {2, c, h, w});
  const int64_t e = 4 * c;
  b.conv("x", "ex", c, e, 1, 1, true);
  const std::string ea = activation(b, "ex", act, "ea");
  b.conv(ea, "dw", e, e, k, e, true, stride);
  const std::string da = activation(b, "dw", dw_act, "da");
  b.node("GlobalAveragePool", {da}, {"gap"});
  b.conv("gap", "s1", e, 4, 1, 1, true);
  const std::string s1 = activation(b, "s1", "Silu", "s1a");
  b.conv(s1, "s2", 4, e, 1, 1, true);
  b.node("Sigmoid", {"s2"}, {"gate"});
  b.node("Mul", {da, "gate"}, {"se"});
  return finish_block(b, "se", e, c, stride);
}

std::map<std::string, Tensor> feeds_for(const ir::Graph& g, uint32_t seed = 11) {
  return random_feeds(g, seed, -3.f, 3.f);
}

const ir::Node* node_named(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// fuse_conv_epilogues, then the move: returns the number of moves; `g` is left rewritten.
size_t fuse_and_move(ir::Graph& g) {
  EXPECT_GE(passes::fuse_conv_epilogues(g), 1u);
  passes::infer_shapes(g);
  const size_t moved = passes::move_input_activations(g);
  g.topo_sort();
  passes::infer_shapes(g);
  return moved;
}

void expect_same_outputs(const ir::Graph& original, const ir::Graph& rewritten, double tol = 2e-5) {
  const auto feeds = feeds_for(original);
  const auto want = run_cpu(original, feeds);
  const auto got = run_cpu(rewritten, feeds);
  for (const std::string& o : original.outputs) EXPECT_LE(max_rel_diff(got.at(o), want.at(o)), tol) << o;
}

// The expand conv node is named "Conv_0"; the depthwise conv "Conv_<index>" after the expand's activation nodes.
std::string dw_name(const ir::Graph& original) {
  for (const ir::Node& n : original.nodes)
    if (n.op_type == "Conv" && n.outputs[0] == "dw") return n.name;
  return "";
}

}  // namespace

TEST(InputActivation, MovesSiluIntoTheDepthwiseConvAndMatchesTheOriginal) {
  OptIn on;
  const ir::Graph original = block("Silu");
  ir::Graph g = original;
  ASSERT_EQ(fuse_and_move(g), 1u) << g.to_string();  // the squeeze-excite's SiLU feeds a 1x1 conv: stays
  const ir::Node* ex = node_named(g, "Conv_0");
  const ir::Node* dw = node_named(g, dw_name(original));
  ASSERT_TRUE(ex && dw) << g.to_string();
  EXPECT_FALSE(ex->has_attr("activation")) << "the expand conv ends at its bias";
  EXPECT_EQ(dw->attr_string("input_activation", std::string()), "Silu");
  EXPECT_EQ(dw->attr_string("activation", std::string()), "Silu");
  const ops::nn::FusedEpilogue e = ops::nn::read_fused_epilogue(*dw);
  EXPECT_EQ(e.in_act, ops::nn::FusedActivation::kSilu);
  EXPECT_EQ(ops::nn::describe_epilogue(e), "in-silu+bias+silu");
  EXPECT_EQ(ops::nn::conv_part_of(*dw).attrs.count("input_activation"), 0u);
  expect_same_outputs(original, g);
}

TEST(InputActivation, EveryMovedActivationKeepsThePaddingZero) {
  OptIn on;
  // HardSigmoid and Sigmoid are not 0 at 0: a padded border activated too would change every border output.
  for (const char* act : {"Silu", "HardSwish", "HardSigmoid", "Sigmoid", "Clip", "LeakyRelu", "Gelu"}) {
    for (int64_t k : {3, 5}) {
      for (int64_t stride : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << act << " k " << k << " stride " << stride);
        const ir::Graph original = block(act, stride == 1 ? "HardSwish" : "", k, stride);
        ir::Graph g = original;
        ASSERT_EQ(fuse_and_move(g), 1u) << g.to_string();
        const ir::Node* dw = node_named(g, dw_name(original));
        ASSERT_NE(dw, nullptr);
        EXPECT_EQ(dw->attr_string("input_activation", std::string()), act);
        if (std::string(act) == "Clip" || std::string(act) == "LeakyRelu" || std::string(act) == "HardSigmoid")
          EXPECT_TRUE(dw->has_attr("input_activation_params"));
        expect_same_outputs(original, g);
      }
    }
  }
}

TEST(InputActivation, APlainDepthwiseConvBecomesAFusedConv) {
  OptIn on;
  const ir::Graph original = block("HardSwish", "");  // the depthwise conv has no epilogue: still a plain Conv
  ir::Graph g = original;
  ASSERT_EQ(fuse_and_move(g), 1u);
  const ir::Node* dw = node_named(g, dw_name(original));
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->op_type, ops::nn::kFusedConvOp);
  EXPECT_EQ(dw->domain, ops::nn::kFusedConvDomain);
  EXPECT_EQ(ops::nn::describe_epilogue(ops::nn::read_fused_epilogue(*dw)), "in-hardswish+bias");
  expect_same_outputs(original, g);
}

TEST(InputActivation, LeavesReluNoActivationAndOtherConsumersAlone) {
  OptIn on;
  // ReLU is applied by the GEMM's epilogue for free; no activation: nothing to move.
  for (const char* act : {"Relu", ""}) {
    ir::Graph g = block(act);
    EXPECT_EQ(fuse_and_move(g), 0u) << act;
  }
  {  // the expanded value read twice (depthwise conv and an extra output)
    ir::Graph g = block("Silu");
    g.outputs.push_back("ea");
    EXPECT_EQ(fuse_and_move(g), 0u);
  }
  {  // a dense 3x3 consumer (group 1) and a grouped, not depthwise, one
    for (int64_t group : {1, 4}) {
      GraphBuilder b(20);
      b.input("x", {1, 8, 6, 6});
      b.conv("x", "ex", 8, 16, 1, 1, true);
      activation(b, "ex", "Silu", "ea");
      b.conv("ea", "y", 16, 16, 3, group, true);
      b.output("y");
      ir::Graph g = b.finish();
      EXPECT_EQ(fuse_and_move(g), 0u) << "group " << group;
    }
  }
  {  // a 3x3 producer (stems have their own kernels applying the activation) and two readers in one node
    GraphBuilder b(20);
    b.input("x", {1, 8, 6, 6});
    b.conv("x", "ex", 8, 16, 3, 1, true);
    activation(b, "ex", "Silu", "ea");
    b.conv("ea", "dw", 16, 16, 3, 16, true);
    b.conv("x", "ex2", 8, 16, 1, 1, true);
    activation(b, "ex2", "Silu", "eb");
    b.conv("eb", "dw2", 16, 16, 3, 16, true);
    b.node("Add", {"dw2", "eb"}, {"s"});  // eb: also the Add's operand
    b.node("Add", {"dw", "s"}, {"y"});
    b.output("y");
    ir::Graph g = b.finish();
    EXPECT_EQ(fuse_and_move(g), 0u) << g.to_string();
  }
}

TEST(InputActivation, ThroughOptimizeGraphAndTheSwitches) {
  const ir::Graph original = block("Silu");
  {  // off by default
    ir::Graph g = original;
    passes::optimize_graph(g);
    for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.has_attr("input_activation")) << n.name;
  }
  OptIn on;
  ir::Graph g = original;
  passes::optimize_graph(g);
  size_t with_input_act = 0;
  for (const ir::Node& n : g.nodes) with_input_act += n.has_attr("input_activation");
  EXPECT_EQ(with_input_act, 1u) << g.to_string();
  EXPECT_EQ(count_ops(g, "SqueezeExcite"), 1u) << "the squeeze-excite fusion still matches after the move";
  expect_same_outputs(original, g);
  setenv("KILNRT_NO_FUSION", "input-act", 1);
  ir::Graph off = original;
  passes::optimize_graph(off);
  unsetenv("KILNRT_NO_FUSION");
  for (const ir::Node& n : off.nodes) EXPECT_FALSE(n.has_attr("input_activation")) << n.name;
  expect_same_outputs(original, off);
  // KILNRT_INPUT_ACT=stride1: stride-2 depthwise convolutions keep their input as it is.
  OptIn stride1("stride1");
  ir::Graph s2 = block("Silu", "Silu", 3, 2), s1 = block("Silu");
  const size_t moved_s2 = fuse_and_move(s2), moved_s1 = fuse_and_move(s1);
  EXPECT_EQ(moved_s2, 0u);
  EXPECT_EQ(moved_s1, 1u);
}

TEST(InputActivation, ClearErrorsForBadAttributes) {
  OptIn on;
  ir::Graph g = block("Silu");
  ASSERT_EQ(fuse_and_move(g), 1u);
  ir::Node* dw = nullptr;
  for (ir::Node& n : g.nodes)
    if (n.has_attr("input_activation")) dw = &n;
  ASSERT_NE(dw, nullptr);
  const std::string name = dw->name;
  dw->attrs["input_activation"] = string_attr("Swish2");
  try {
    ops::nn::read_fused_epilogue(*dw);
    FAIL() << "an unknown input activation must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Swish2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  dw->attrs["input_activation"] = string_attr("Clip");
  try {
    ops::nn::read_fused_epilogue(*dw);
    FAIL() << "Clip needs two input_activation_params";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input_activation_params"), std::string::npos) << e.what();
  }
  dw->attrs["input_activation"] = string_attr("Silu");
  EXPECT_NO_THROW(ops::nn::check_input_activation_reader(*dw, g));
  g.outputs.push_back(dw->inputs[0]);  // X also a graph output: backends may not activate it in place
  try {
    ops::nn::check_input_activation_reader(*dw, g);
    FAIL() << "an input activation on a value read elsewhere must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

// ---- CPU engines built from an ONNX file ------------------------------------------------------------------------
namespace {

// x[batch,8,7,7] -> 1x1 conv to 32 -> SiLU (Sigmoid, Mul) -> 3x3 depthwise -> HardSwish -> 1x1 conv to 8 -> y.
std::string write_expand_model() {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.opsets = {{"", 17}};
  GraphSpec& g = m.graph;
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 8, 7, 7}));
  g.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 8, 7, 7}));
  RandomInitializers add{g, 60};
  add("we", {32, 8, 1, 1}, -0.5f, 0.5f);
  add("be", {32}, -0.5f, 0.5f);
  add("wd", {32, 1, 3, 3}, -0.5f, 0.5f);
  add("bd", {32}, -0.5f, 0.5f);
  add("wp", {8, 32, 1, 1}, -0.3f, 0.3f);
  g.nodes.push_back(NodeSpec{"Conv", {"x", "we", "be"}, {"e"}, {}, "expand"});
  g.nodes.push_back(NodeSpec{"Sigmoid", {"e"}, {"es"}, {}, "sig"});
  g.nodes.push_back(NodeSpec{"Mul", {"e", "es"}, {"ea"}, {}, "silu"});
  g.nodes.push_back(NodeSpec{"Conv",
                             {"ea", "wd", "bd"},
                             {"d"},
                             {AttrSpec::Ints("pads", {1, 1, 1, 1}), AttrSpec::Int("group", 32)},
                             "depthwise"});
  g.nodes.push_back(NodeSpec{"HardSwish", {"d"}, {"da"}, {}, "hswish"});
  g.nodes.push_back(NodeSpec{"Conv", {"da", "wp"}, {"y"}, {}, "project"});
  const std::string path = ::testing::TempDir() + "kilnrt_expand_block.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  return path;
}

}  // namespace

TEST(InputActivationEngine, CpuEngineMatchesTheEngineWithoutTheMove) {
  const std::string path = write_expand_model();
  BuildOptions opt;
  opt.profiles = {{parse_shape_spec("x:1x8x7x7/2x8x7x7/3x8x7x7")}};
  std::vector<uint8_t> moved_bytes;
  {
    OptIn on;
    moved_bytes = build_engine(path, opt);
  }
  const std::vector<uint8_t> plain_bytes = build_engine(path, opt);
  std::remove(path.c_str());
  auto moved = Engine::from_bytes(moved_bytes.data(), moved_bytes.size());
  auto plain = Engine::from_bytes(plain_bytes.data(), plain_bytes.size());
  EXPECT_EQ(moved->layers().size(), plain->layers().size());
  for (int64_t batch : {1, 3}) {
    const Tensor x = random_tensor({batch, 8, 7, 7}, 78, -3.f, 3.f);
    const Tensor got = moved->run({{"x", x}}).at("y");
    const Tensor want = plain->run({{"x", x}}).at("y");
    // A lost input activation (engine file round trip) changes every output by far more than this.
    EXPECT_LE(max_rel_diff(got, want), 2e-5) << "batch " << batch;
  }
}
