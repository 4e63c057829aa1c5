// Conv+BN folding and conv epilogue fusion: each pass is run on a graph, and the graph before and after
// gives the same outputs on the CPU backend; edge cases the passes must refuse leave the graph unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "conv_fusion_test_util.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#include "ops/nn/fused_conv/fused_conv.h"
#include "passes/fold_conv_bn.h"
#include "passes/fuse_conv_epilogue.h"
#include "passes/optimize.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

const Shape kX = {2, 4, 7, 7};

std::map<std::string, Tensor> inputs_for(const ir::Graph& g, uint32_t seed = 99) {
  std::map<std::string, Tensor> in;
  for (const std::string& name : g.inputs) {
    const ir::TensorType* t = g.type_of(name);
    in[name] = random_tensor(ir::sym_shape_to_shape(t->shape), seed++, -2.f, 2.f);
  }
  return in;
}

// Runs `pass` on a copy of `g`, checks that it reports `expected` rewrites and that the outputs agree.
template <class Pass>
ir::Graph check_pass(const ir::Graph& g, Pass pass, size_t expected, double tol = 2e-5) {
  ir::Graph after = g;
  EXPECT_EQ(pass(after), expected);
  after.topo_sort();  // throws if the rewrite broke the order
  passes::infer_shapes(after);
  const auto in = inputs_for(g);
  const auto ref = run_cpu(g, in);
  const auto got = run_cpu(after, in);
  for (const std::string& o : g.outputs) {
    EXPECT_LE(max_rel_diff(got.at(o), ref.at(o)), tol) << "output " << o;
  }
  return after;
}

size_t fold(ir::Graph& g) { return passes::fold_conv_batchnorm(g); }
size_t fuse(ir::Graph& g) { return passes::fuse_conv_epilogues(g); }

}  // namespace

// ---- Conv + BatchNormalization folding --------------------------------------------------------------------------
TEST(ConvBnFold, FoldsWithAndWithoutBiasAndGroups) {
  for (bool bias : {true, false}) {
    for (int64_t group : {1, 2, 4}) {
      GraphBuilder b;
      b.input("x", kX);
      b.conv("x", "c", 4, 8, 3, group, bias);
      b.batchnorm("c", "y", 8);
      b.output("y");
      ir::Graph after = check_pass(b.finish(), fold, 1);
      EXPECT_EQ(count_ops(after, "BatchNormalization"), 0u);
      ASSERT_EQ(count_ops(after, "Conv"), 1u);
      EXPECT_EQ(after.nodes[0].inputs.size(), 3u) << "the folded conv has a bias";
      EXPECT_EQ(after.nodes[0].outputs[0], "y");
    }
  }
}

TEST(ConvBnFold, ZeroVarianceWithEpsilonFolds) {
  GraphBuilder b;
  b.input("x", kX);
  b.conv("x", "c", 4, 3, 1, 1, true);
  b.batchnorm("c", "y", 3, 1e-3f);
  b.constant("y_var", Tensor::zeros(DType::kFloat32, {3}));
  b.output("y");
  check_pass(b.finish(), fold, 1, 1e-4);
}

TEST(ConvBnFold, ZeroVarianceAndZeroEpsilonRefused) {
  GraphBuilder b;
  b.input("x", kX);
  b.conv("x", "c", 4, 3, 1, 1, true);
  b.batchnorm("c", "y", 3, 0.f);
  b.constant("y_var", Tensor::zeros(DType::kFloat32, {3}));
  b.output("y");
  ir::Graph g = b.finish();
  EXPECT_EQ(passes::fold_conv_batchnorm(g), 0u) << "scale / sqrt(0) is not a finite weight";
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 1u);
}

TEST(ConvBnFold, ConvTransposeWithGroups) {
  for (int64_t group : {1, 2}) {
    GraphBuilder b;
    b.input("x", kX);
    const std::string w = b.random_constant("w", {4, 6 / group, 3, 3}, -0.5f, 0.5f);
    ir::Node& n = b.node("ConvTranspose", {"x", w}, {"c"});
    n.attrs["group"] = int_attr(group);
    n.attrs["strides"] = ints_attr({2, 2});
    b.batchnorm("c", "y", 6);
    b.output("y");
    ir::Graph after = check_pass(b.finish(), fold, 1);
    EXPECT_EQ(count_ops(after, "BatchNormalization"), 0u);
  }
}

TEST(ConvBnFold, RefusesSharedOutputNonConstantParamsAndTraining) {
  {  // the conv output is read by another node too
    GraphBuilder b;
    b.input("x", kX);
    b.conv("x", "c", 4, 4, 3, 1, true);
    b.batchnorm("c", "bn", 4);
    b.node("Add", {"bn", "c"}, {"y"});
    b.output("y");
    check_pass(b.finish(), fold, 0);
  }
  {  // the conv output is a graph output
    GraphBuilder b;
    b.input("x", kX);
    b.conv("x", "c", 4, 4, 3, 1, true);
    b.batchnorm("c", "y", 4);
    b.output("y");
    b.output("c");
    check_pass(b.finish(), fold, 0);
  }
  {  // the mean is a graph input
    GraphBuilder b;
    b.input("x", kX);
    b.input("mean", {4});
    b.conv("x", "c", 4, 4, 3, 1, true);
    b.batchnorm("c", "y", 4).inputs[3] = "mean";
    b.output("y");
    check_pass(b.finish(), fold, 0);
  }
  {  // the weights are a graph input
    GraphBuilder b;
    b.input("x", kX);
    b.input("w", {4, 4, 1, 1});
    b.node("Conv", {"x", "w"}, {"c"});
    b.batchnorm("c", "y", 4);
    b.output("y");
    ir::Graph g = b.finish();
    EXPECT_EQ(passes::fold_conv_batchnorm(g), 0u);
  }
}

// ---- epilogue fusion --------------------------------------------------------------------------------------------
namespace {

// conv -> (Add residual) -> activation built by `act` (which returns the final value name).
template <class Act>
ir::Graph conv_chain(bool bias, bool residual, Act act, int64_t group = 1) {
  GraphBuilder b(20);
  b.input("x", kX);
  if (residual) b.input("z", {2, 8, 7, 7});
  b.conv("x", "c", 4, 8, 3, group, bias);
  std::string cur = "c";
  if (residual) {
    b.node("Add", {"z", cur}, {"sum"});
    cur = "sum";
  }
  b.output(act(b, cur));
  return b.finish();
}

std::string unary(GraphBuilder& b, const std::string& x, const std::string& op) {
  b.node(op, {x}, {x + "_" + op});
  return x + "_" + op;
}

void expect_fused(const ir::Graph& after, const std::string& activation, bool residual) {
  ASSERT_EQ(after.nodes.size(), 1u) << after.to_string();
  const ir::Node& n = after.nodes[0];
  EXPECT_EQ(n.op_type, "FusedConv");
  EXPECT_EQ(n.domain, "com.kilnrt");
  EXPECT_EQ(n.attr_string("activation", std::string()), activation);
  EXPECT_EQ(n.inputs.size() > 3 && !n.inputs[3].empty(), residual);
}

}  // namespace

TEST(ConvEpilogueFusion, SingleOpActivations) {
  for (const char* op : {"Relu", "Sigmoid", "HardSwish", "LeakyRelu", "HardSigmoid", "Gelu"}) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(op) + (residual ? " with residual" : ""));
      ir::Graph g = conv_chain(true, residual, [&](GraphBuilder& b, const std::string& x) { return unary(b, x, op); });
      if (std::string(op) == "LeakyRelu") g.nodes.back().attrs["alpha"] = float_attr(0.1f);
      if (std::string(op) == "HardSigmoid") g.nodes.back().attrs["alpha"] = float_attr(0.3f);
      expect_fused(check_pass(g, fuse, 1), op, residual);
    }
  }
}

TEST(ConvEpilogueFusion, GeluTanhClipAndResidualOnly) {
  ir::Graph gt = conv_chain(true, false, [](GraphBuilder& b, const std::string& x) { return unary(b, x, "Gelu"); });
  gt.nodes.back().attrs["approximate"] = string_attr("tanh");
  expect_fused(check_pass(gt, fuse, 1), "GeluTanh", false);
  // Clip as ReLU6 with constant bound inputs (opset 11+), and with only a max.
  for (bool with_min : {true, false}) {
    ir::Graph gc = conv_chain(false, true, [&](GraphBuilder& b, const std::string& x) {
      b.constant("lo", Tensor::from_vector(std::vector<float>{0.f}, DType::kFloat32, {}));
      b.constant("hi", Tensor::from_vector(std::vector<float>{0.6f}, DType::kFloat32, {}));
      b.node("Clip", {x, with_min ? "lo" : "", "hi"}, {"clipped"});
      return std::string("clipped");
    });
    ir::Graph after = check_pass(gc, fuse, 1);
    expect_fused(after, "Clip", true);
    const auto p = after.nodes[0].attr_floats("activation_params");
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[1], 0.6f);
    if (!with_min) EXPECT_TRUE(std::isinf(p[0]) && p[0] < 0);
  }
  // Residual add without activation.
  ir::Graph ga = conv_chain(true, true, [](GraphBuilder&, const std::string& x) { return x; });
  expect_fused(check_pass(ga, fuse, 1), "", true);
}

TEST(ConvEpilogueFusion, MulPatternsSiluAndHardSwish) {
  ir::Graph gs = conv_chain(true, true, [](GraphBuilder& b, const std::string& x) {
    b.node("Sigmoid", {x}, {"sig"});
    b.node("Mul", {"sig", x}, {"silu"});
    return std::string("silu");
  });
  expect_fused(check_pass(gs, fuse, 1), "Silu", true);
  ir::Graph gh = conv_chain(true, false, [](GraphBuilder& b, const std::string& x) {
    ir::Node& hs = b.node("HardSigmoid", {x}, {"hsig"});
    hs.attrs["alpha"] = float_attr(1.f / 6.f);
    b.node("Mul", {x, "hsig"}, {"hswish"});
    return std::string("hswish");
  });
  expect_fused(check_pass(gh, fuse, 1), "HardSwish", false);
  // x * HardSigmoid(x) with other constants is not HardSwish: only a plain conv remains fusable (nothing).
  ir::Graph go = conv_chain(true, false, [](GraphBuilder& b, const std::string& x) {
    b.node("HardSigmoid", {x}, {"hsig"});  // alpha 0.2
    b.node("Mul", {x, "hsig"}, {"prod"});
    return std::string("prod");
  });
  check_pass(go, fuse, 0);
}

TEST(ConvEpilogueFusion, ConvWithoutBiasAndGroups) {
  for (int64_t group : {1, 2, 4}) {
    ir::Graph g = conv_chain(
        false, true, [](GraphBuilder& b, const std::string& x) { return unary(b, x, "Relu"); }, group);
    ir::Graph after = check_pass(g, fuse, 1);
    expect_fused(after, "Relu", true);
    EXPECT_TRUE(after.nodes[0].inputs[2].empty()) << "no bias input";
    EXPECT_EQ(after.nodes[0].attr_int("group"), group);
  }
}

TEST(ConvEpilogueFusion, BroadcastResidualRefused) {
  for (const Shape& zs : std::vector<Shape>{{1, 8, 1, 1}, {8, 1, 1}, {1, 8, 7, 7}}) {
    GraphBuilder b;
    b.input("x", kX);
    b.input("z", zs);
    b.conv("x", "c", 4, 8, 3, 1, true);
    b.node("Add", {"c", "z"}, {"y"});
    b.output("y");
    ir::Graph after = check_pass(b.finish(), fuse, 0);
    EXPECT_EQ(count_ops(after, "Add"), 1u) << "a broadcasting Add must stay a separate node";
  }
  // With an activation after the broadcasting Add, the Add still stays and nothing fuses across it.
  GraphBuilder b;
  b.input("x", kX);
  b.input("z", {1, 8, 1, 1});
  b.conv("x", "c", 4, 8, 3, 1, true);
  b.node("Add", {"c", "z"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  check_pass(b.finish(), fuse, 0);
}

TEST(ConvEpilogueFusion, RefusesIntermediatesReadElsewhere) {
  GraphBuilder b;
  b.input("x", kX);
  b.input("z", {2, 8, 7, 7});
  b.conv("x", "c", 4, 8, 3, 1, true);
  b.node("Add", {"c", "z"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  b.output("s");  // the sum is an output too: only Conv(+bias)+Add may fuse, and Add's output is kept
  ir::Graph after = check_pass(b.finish(), fuse, 1);
  ASSERT_EQ(after.nodes.size(), 2u);
  EXPECT_EQ(after.nodes[0].op_type, "FusedConv");
  EXPECT_EQ(after.nodes[0].outputs[0], "s");
  EXPECT_EQ(after.nodes[1].op_type, "Relu");
}

TEST(ConvEpilogueFusion, ResidualProducedAfterTheConv) {
  GraphBuilder b;
  b.input("x", kX);
  b.conv("x", "c", 4, 8, 3, 1, true);
  b.conv("x", "d", 4, 8, 1, 1, false);  // listed after "c": the fused node must come after it
  b.node("Add", {"c", "d"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  ir::Graph after = check_pass(b.finish(), fuse, 1);
  ASSERT_EQ(after.nodes.size(), 2u);
  EXPECT_EQ(after.nodes[0].op_type, "Conv");
  EXPECT_EQ(after.nodes[1].op_type, "FusedConv");
}

TEST(ConvEpilogueFusion, FullPipelineResNetBlock) {
  // conv-bn-relu -> conv-bn -> + identity -> relu, through the builder's pass pipeline.
  GraphBuilder b;
  b.input("x", {2, 8, 7, 7});
  b.conv("x", "c1", 8, 8, 3, 1, false);
  b.batchnorm("c1", "b1", 8);
  b.node("Relu", {"b1"}, {"r1"});
  b.conv("r1", "c2", 8, 8, 3, 1, false);
  b.batchnorm("c2", "b2", 8);
  b.node("Add", {"b2", "x"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  const ir::Graph g = b.finish();
  ir::Graph after = check_pass(
      g,
      [](ir::Graph& x) {
        passes::optimize_graph(x);
        return size_t(0);
      },
      0);
  ASSERT_EQ(after.nodes.size(), 2u) << after.to_string();
  EXPECT_EQ(count_ops(after, "FusedConv"), 2u);
  EXPECT_EQ(after.nodes[1].inputs.at(3), "x");
  EXPECT_EQ(after.opset("com.kilnrt"), 1);
}

// ---- the FusedConv op itself ------------------------------------------------------------------------------------
TEST(FusedConvOp, ClearErrors) {
  GraphBuilder b(20);
  b.input("x", kX);
  b.input("z", {2, 8, 1, 1});
  b.g.opsets["com.kilnrt"] = 1;
  const std::string w = b.random_constant("w", {8, 4, 3, 3});
  ir::Node& n = b.node("FusedConv", {"x", w, "", "z"}, {"y"});
  n.domain = "com.kilnrt";
  n.name = "my_fused";
  b.output("y");
  try {
    passes::infer_shapes(b.g);
    FAIL() << "a broadcasting residual must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my_fused"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no broadcasting"), std::string::npos) << e.what();
  }
  b.g.types["z"].shape = ir::shape_to_sym({2, 8, 5, 5});
  b.g.nodes.back().attrs["activation"] = string_attr("Swish2");
  try {
    passes::infer_shapes(b.g);
    FAIL() << "an unknown activation must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Swish2"), std::string::npos) << e.what();
  }
  b.g.nodes.back().attrs["activation"] = string_attr("Clip");
  EXPECT_THROW(passes::infer_shapes(b.g), Error) << "Clip needs two activation_params";
  // The CPU kernel checks the residual's concrete shape too (a dynamic dim hid the mismatch from inference).
  b.g.nodes.back().attrs.erase("activation");
  backends::cpu::CpuPlan plan(b.g);
  try {
    plan.run({{"x", random_tensor(kX, 1)}, {"z", random_tensor({2, 8, 7, 1}, 2)}});
    FAIL() << "a residual of another shape must be refused at run time";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my_fused"), std::string::npos) << e.what();
  }
}

// ---- through the builder, the engine file and back (CPU engines) ------------------------------------------------
namespace {

// x[batch,4,8,8] -> Conv -> BN -> Clip(max 6 only) -> Conv -> BN -> + clip output -> Relu -> y, dynamic batch.
std::string write_block_model() {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.opsets = {{"", 13}};
  GraphSpec& g = m.graph;
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4, 8, 8}));
  g.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 4, 8, 8}));
  RandomInitializers add{g, 40};
  for (int i : {1, 2}) {
    const std::string k = std::to_string(i);
    add("w" + k, {4, 4, 3, 3}, -0.4f, 0.4f);
    add("scale" + k, {4}, 0.5f, 1.5f);
    add("beta" + k, {4}, -0.5f, 0.5f);
    add("mean" + k, {4}, -0.3f, 0.3f);
    add("var" + k, {4}, 0.5f, 2.f);
  }
  g.initializers.push_back(TensorSpec::float_raw("six", {}, {6.f}));
  const std::vector<AttrSpec> conv_attrs = {AttrSpec::Ints("pads", {1, 1, 1, 1}),
                                            AttrSpec::Ints("kernel_shape", {3, 3})};
  g.nodes.push_back(NodeSpec{"Conv", {"x", "w1"}, {"c1"}, conv_attrs, "conv1"});
  g.nodes.push_back(NodeSpec{"BatchNormalization", {"c1", "scale1", "beta1", "mean1", "var1"}, {"b1"}, {}, "bn1"});
  g.nodes.push_back(NodeSpec{"Clip", {"b1", "", "six"}, {"r1"}, {}, "clip1"});
  g.nodes.push_back(NodeSpec{"Conv", {"r1", "w2"}, {"c2"}, conv_attrs, "conv2"});
  g.nodes.push_back(NodeSpec{"BatchNormalization", {"c2", "scale2", "beta2", "mean2", "var2"}, {"b2"}, {}, "bn2"});
  g.nodes.push_back(NodeSpec{"Add", {"b2", "r1"}, {"s"}, {}, "add"});
  g.nodes.push_back(NodeSpec{"Relu", {"s"}, {"y"}, {}, "relu"});
  const std::string path = ::testing::TempDir() + "kilnrt_conv_block.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  return path;
}

}  // namespace

TEST(ConvFusionEngine, CpuEngineRoundTripMatchesUnfusedEngine) {
  const std::string path = write_block_model();
  BuildOptions opt;
  opt.profiles = {{parse_shape_spec("x:1x4x8x8/2x4x8x8/3x4x8x8")}};
  const std::vector<uint8_t> fused_bytes = build_engine(path, opt);
  setenv("KILNRT_NO_FUSION", "conv-bn,conv-epilogue", 1);
  const std::vector<uint8_t> plain_bytes = build_engine(path, opt);
  unsetenv("KILNRT_NO_FUSION");
  std::remove(path.c_str());
  auto fused = Engine::from_bytes(fused_bytes.data(), fused_bytes.size());
  auto plain = Engine::from_bytes(plain_bytes.data(), plain_bytes.size());
  std::map<std::string, int> fused_ops, plain_ops;
  for (const LayerInfo& l : fused->layers()) fused_ops[l.op_type]++;
  for (const LayerInfo& l : plain->layers()) plain_ops[l.op_type]++;
  // Both convolutions fuse across the dynamic (named) batch dim; the residual is the first fused conv's output.
  EXPECT_EQ(fused_ops["FusedConv"], 2) << "fused engine layers: " << fused->layers().size();
  EXPECT_EQ(fused_ops["BatchNormalization"], 0);
  EXPECT_EQ(fused->layers().size(), 2u);
  EXPECT_EQ(plain_ops["BatchNormalization"], 2) << "KILNRT_NO_FUSION must leave the graph unfused";
  EXPECT_EQ(plain_ops["FusedConv"], 0);
  for (int64_t batch : {1, 3}) {
    const Tensor x = random_tensor({batch, 4, 8, 8}, 77, -3.f, 3.f);
    const Tensor got = fused->run({{"x", x}}).at("y");
    const Tensor want = plain->run({{"x", x}}).at("y");
    // Clip's absent min is stored as -inf in the fused node: a wrong round trip (0, NaN) changes negative values.
    EXPECT_LE(max_rel_diff(got, want), 2e-5) << "batch " << batch;
  }
}

TEST(ConvFusionEngine, NoFusionEnvSkipsThePasses) {
  GraphBuilder b;
  b.input("x", kX);
  b.conv("x", "c", 4, 4, 3, 1, true);
  b.batchnorm("c", "bn", 4);
  b.node("Relu", {"bn"}, {"y"});
  b.output("y");
  ir::Graph g = b.finish();
  setenv("KILNRT_NO_FUSION", "all", 1);
  EXPECT_EQ(passes::fold_conv_batchnorm(g), 0u);
  EXPECT_EQ(passes::fuse_conv_epilogues(g), 0u);
  unsetenv("KILNRT_NO_FUSION");
  EXPECT_EQ(g.nodes.size(), 3u);
  check_pass(g, fold, 1);
}
