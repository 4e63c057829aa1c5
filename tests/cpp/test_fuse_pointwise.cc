// Pointwise fusion pass on the CPU: graphs before and after passes::fuse_pointwise give the same values on
// random inputs (broadcasting, immediates, every op the pass lowers, Where / Cast), intermediates read outside the
// group or marked as graph outputs stay materialised, KILNRT_NO_FUSION=pointwise turns it off, and a damaged
// program is refused naming the node.
#include <gtest/gtest.h>

#include <cstdlib>

#include "conv_fusion_test_util.h"
#include "engine_features_model.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#include "ops/nn/fused_pointwise/fused_pointwise.h"
#include "passes/fuse_pointwise.h"
#include "passes/optimize.h"
#include "passes/shape_inference.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

std::map<std::string, Tensor> feeds_for(const ir::Graph& g, float lo, float hi) {
  std::map<std::string, Tensor> in;
  uint32_t seed = 11;
  for (const std::string& name : g.inputs) {
    const ir::TensorType* t = g.type_of(name);
    const Shape s = ir::sym_shape_to_shape(t->shape);
    if (t->dtype == DType::kBool) {
      Tensor b = Tensor::empty(DType::kBool, s);
      std::mt19937 rng(seed++);
      for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = rng() & 1;
      in[name] = b;
    } else {
      in[name] = random_tensor(s, seed++, lo, hi);
    }
  }
  return in;
}

Tensor as_float32(const Tensor& t) {
  if (t.dtype() != DType::kFloat16) return t;
  Tensor f = Tensor::empty(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = half_to_float(t.data<uint16_t>()[i]);
  return f;
}

// Fuses a copy of `g`, expects `groups` FusedPointwise nodes and `nodes` nodes in all, and compares every output.
ir::Graph check_fused(const ir::Graph& g, size_t groups, size_t nodes, float lo = -2.f, float hi = 2.f,
                      double tol = 1e-5) {
  ir::Graph f = g;
  EXPECT_EQ(passes::fuse_pointwise(f), groups);
  passes::infer_shapes(f);
  EXPECT_EQ(count_ops(f, "FusedPointwise"), groups);
  EXPECT_EQ(f.nodes.size(), nodes);
  const auto feeds = feeds_for(g, lo, hi);
  const auto want = run_cpu(g, feeds);
  const auto got = run_cpu(f, feeds);
  for (const std::string& o : g.outputs) {
    const Tensor a = as_float32(got.at(o)), b = as_float32(want.at(o));
    EXPECT_EQ(got.at(o).dtype(), want.at(o).dtype()) << o;
    EXPECT_EQ(a.shape(), b.shape()) << o;
    EXPECT_LE(max_rel_diff(a, b), tol) << "output " << o;
  }
  return f;
}

std::string scalar(GraphBuilder& b, const std::string& name, float v) {
  return b.constant(name, Tensor::from_vector(std::vector<float>{v}, DType::kFloat32, {}));
}

TEST(FusePointwise, BroadcastChainWithImmediatesIsOneNode) {
  // ConvNeXt's layer scale + residual, with an activation: relu(x * gamma + r) * 0.5 - 1
  GraphBuilder b;
  b.input("x", {2, 3, 4, 5});
  b.input("r", {2, 3, 4, 5});
  b.random_constant("gamma", {3, 1, 1});
  scalar(b, "half", 0.5f);
  scalar(b, "one", 1.f);
  b.node("Mul", {"x", "gamma"}, {"a"});
  b.node("Add", {"a", "r"}, {"s"});
  b.node("Relu", {"s"}, {"t"});
  b.node("Mul", {"t", "half"}, {"u"});
  b.node("Sub", {"u", "one"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  const ir::Graph f = check_fused(b.g, 1, 1);
  const ir::Node& n = f.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "gamma", "r"}));  // the scalars became immediates
  const ops::nn::PwProgram p = ops::nn::read_pointwise_program(n);
  EXPECT_EQ(p.code.size(), 7u);  // 5 ops + 2 Const
  EXPECT_EQ(ops::nn::describe_pointwise(p), "mul+add+relu+mul+sub");
}

TEST(FusePointwise, OutputShapeCarriedByInputsOfLowerRank) {
  // [4] * [3,1] -> [3,4]: the output's rank comes from the broadcast of the inputs.
  GraphBuilder b;
  b.input("x", {4});
  b.input("y", {3, 1});
  b.node("Mul", {"x", "y"}, {"m"});
  b.node("Tanh", {"m"}, {"z"});
  b.g.outputs = {"z"};
  passes::infer_shapes(b.g);
  check_fused(b.g, 1, 1);
}

// Every op the pass lowers: Op(x + c), where c moves x into the op's domain.
struct OpCase {
  const char* op;
  float lo, hi;  // range of x + c
  std::vector<std::pair<std::string, float>> float_attrs;
};

TEST(FusePointwise, EveryLoweredOpMatchesTheUnfusedGraph) {
  const std::vector<OpCase> cases = {
      {"Neg", -2, 2, {}},
      {"Abs", -2, 2, {}},
      {"Exp", -2, 2, {}},
      {"Log", 0.1f, 3, {}},
      {"Sqrt", 0.1f, 3, {}},
      {"Reciprocal", 0.5f, 3, {}},
      {"Sigmoid", -4, 4, {}},
      {"Tanh", -2, 2, {}},
      {"Erf", -2, 2, {}},
      {"Relu", -2, 2, {}},
      {"Floor", -3, 3, {}},
      {"Ceil", -3, 3, {}},
      {"Sin", -3, 3, {}},
      {"Cos", -3, 3, {}},
      {"Softplus", -3, 3, {}},
      {"Softsign", -3, 3, {}},
      {"HardSwish", -4, 4, {}},
      {"Identity", -2, 2, {}},
      {"Mish", -3, 3, {}},
      {"LeakyRelu", -2, 2, {{"alpha", 0.3f}}},
      {"Elu", -2, 2, {{"alpha", 0.7f}}},
      {"HardSigmoid", -4, 4, {{"alpha", 0.25f}, {"beta", 0.4f}}},
      {"Selu", -2, 2, {}},
      {"Celu", -2, 2, {{"alpha", 1.5f}}},
      {"ThresholdedRelu", -2, 2, {{"alpha", 0.5f}}},
  };
  for (const OpCase& c : cases) {
    SCOPED_TRACE(c.op);
    GraphBuilder b(20);
    b.input("x", {3, 7});
    scalar(b, "c", 0.f);
    b.node("Add", {"x", "c"}, {"a"});
    ir::Node& n = b.node(c.op, {"a"}, {"y"});
    for (const auto& [k, v] : c.float_attrs) n.attrs[k] = float_attr(v);
    b.g.outputs = {"y"};
    passes::infer_shapes(b.g);
    const ir::Graph f = check_fused(b.g, 1, 1, c.lo, c.hi);
    EXPECT_EQ(f.nodes[0].inputs.size(), 1u);
  }
}

TEST(FusePointwise, BinaryOpsClipPowAndGelu) {
  GraphBuilder b(20);
  b.input("x", {2, 8});
  b.input("y", {8});
  b.input("s", {2, 1});
  scalar(b, "lo", -0.5f);
  scalar(b, "hi", 0.75f);
  scalar(b, "three", 3.f);
  b.node("Div", {"x", "y"}, {"d"});
  b.node("Max", {"d", "s"}, {"mx"});
  b.node("Min", {"mx", "x"}, {"mn"});
  b.node("Clip", {"mn", "lo", "hi"}, {"cl"});
  b.node("Pow", {"cl", "three"}, {"p3"});
  b.node("Abs", {"y"}, {"ay"});
  b.node("Pow", {"ay", "s"}, {"pt"});  // tensor exponent
  b.node("PRelu", {"p3", "y"}, {"pr"});
  b.node("Sum", {"pr", "pt"}, {"sm"});
  b.node("Gelu", {"sm"}, {"g"}).attrs["approximate"] = string_attr("tanh");
  b.g.outputs = {"g"};
  passes::infer_shapes(b.g);
  const ir::Graph f = check_fused(b.g, 1, 1, 0.5f, 2.f);
  EXPECT_EQ(f.nodes[0].inputs.size(), 3u);
}

TEST(FusePointwise, WhereAndCastBetweenFloatTypes) {
  GraphBuilder b(17);
  b.input("a", {4, 6});
  b.input("c", {4, 6});
  b.g.inputs.push_back("cond");
  ir::TensorType bt;
  bt.dtype = DType::kBool;
  bt.has_shape = true;
  bt.shape = ir::shape_to_sym({1, 6});
  b.g.types["cond"] = bt;
  b.node("Mul", {"a", "c"}, {"m"});
  b.node("Neg", {"a"}, {"n"});
  b.node("Where", {"cond", "m", "n"}, {"w"});
  b.node("Cast", {"w"}, {"h"}).attrs["to"] = int_attr(10);  // float16
  b.node("Cast", {"h"}, {"f"}).attrs["to"] = int_attr(1);   // back to float32
  b.node("Sigmoid", {"f"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  check_fused(b.g, 1, 1, -3.f, 3.f, 1e-6);
  // Ending on a Cast to float16: the fused node's output is float16.
  ir::Graph g2 = b.g;
  g2.nodes.pop_back();
  g2.nodes.pop_back();
  g2.outputs = {"h"};
  passes::infer_shapes(g2);
  const ir::Graph f2 = check_fused(g2, 1, 1);
  EXPECT_EQ(f2.type_of("h")->dtype, DType::kFloat16);
}

TEST(FusePointwise, SharedIntermediatesInsideAGroupAndValuesReadOutside) {
  // t = x*y is read twice inside the group (x*y * sigmoid(x*y)): one group of three.
  GraphBuilder b;
  b.input("x", {5, 4});
  b.input("y", {5, 4});
  b.node("Mul", {"x", "y"}, {"t"});
  b.node("Sigmoid", {"t"}, {"u"});
  b.node("Mul", {"t", "u"}, {"z"});
  b.g.outputs = {"z"};
  passes::infer_shapes(b.g);
  check_fused(b.g, 1, 1);
  // t also a graph output: it stays; sigmoid + mul fuse (reading t as an input).
  ir::Graph g2 = b.g;
  g2.outputs = {"z", "t"};
  const ir::Graph f2 = check_fused(g2, 1, 2);
  EXPECT_EQ(count_ops(f2, "Mul"), 1u);
  // t read by a node that cannot fuse (ReduceSum): t's producer stays alone, the rest fuses.
  ir::Graph g3 = b.g;
  ir::Node r;
  r.name = "reduce";
  r.op_type = "ReduceSum";
  r.inputs = {"t"};
  r.outputs = {"rs"};
  g3.nodes.push_back(r);
  g3.outputs = {"z", "rs"};
  passes::infer_shapes(g3);
  check_fused(g3, 1, 3);
}

TEST(FusePointwise, SingleNodesAndNonFloatValuesAreLeftAlone) {
  GraphBuilder b;
  b.input("x", {4});
  b.node("Relu", {"x"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  ir::Graph g = b.g;
  EXPECT_EQ(passes::fuse_pointwise(g), 0u);
  // int64 arithmetic is not fused.
  ir::Graph gi;
  gi.name = "int";
  gi.opsets[""] = 17;
  gi.inputs = {"i"};
  ir::TensorType t;
  t.dtype = DType::kInt64;
  t.has_shape = true;
  t.shape = ir::shape_to_sym({3});
  gi.types["i"] = t;
  ir::Node a;
  a.name = "a";
  a.op_type = "Add";
  a.inputs = {"i", "i"};
  a.outputs = {"j"};
  ir::Node m = a;
  m.name = "m";
  m.op_type = "Mul";
  m.inputs = {"j", "i"};
  m.outputs = {"k"};
  gi.nodes = {a, m};
  gi.outputs = {"k"};
  passes::infer_shapes(gi);
  EXPECT_EQ(passes::fuse_pointwise(gi), 0u);
}

TEST(FusePointwise, NoFusionEnvironmentTurnsItOff) {
  GraphBuilder b;
  b.input("x", {4});
  b.node("Relu", {"x"}, {"a"});
  b.node("Neg", {"a"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  ::setenv("KILNRT_NO_FUSION", "gelu,pointwise", 1);
  ir::Graph g = b.g;
  const size_t off = passes::fuse_pointwise(g);
  ::unsetenv("KILNRT_NO_FUSION");
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(passes::fuse_pointwise(g), 1u);
}

TEST(FusePointwise, OptimizeRunsItAfterThePatternFusionsAndOnlyWhenAsked) {
  // The erf GELU pattern stays a com.kilnrt Gelu (fuse_gelu first); its residual Add joins it in a FusedPointwise.
  GraphBuilder b;
  b.input("x", {2, 8});
  b.input("r", {2, 8});
  scalar(b, "sqrt2", std::sqrt(2.f));
  scalar(b, "one", 1.f);
  scalar(b, "half", 0.5f);
  b.node("Div", {"x", "sqrt2"}, {"d"});
  b.node("Erf", {"d"}, {"e"});
  b.node("Add", {"e", "one"}, {"u"});
  b.node("Mul", {"x", "u"}, {"m"});
  b.node("Mul", {"m", "half"}, {"g"});
  b.node("Add", {"g", "r"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  ir::Graph plain = b.g;
  passes::optimize_graph(plain);
  EXPECT_EQ(count_ops(plain, "Gelu"), 1u);
  EXPECT_EQ(count_ops(plain, "FusedPointwise"), 0u);
  ir::Graph fused = b.g;
  passes::OptimizeOptions o;
  o.fuse_pointwise = true;
  passes::optimize_graph(fused, o);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op_type, "FusedPointwise");
  EXPECT_EQ(ops::nn::describe_pointwise(ops::nn::read_pointwise_program(fused.nodes[0])), "gelu+add");
  const auto feeds = feeds_for(b.g, -2.f, 2.f);
  EXPECT_LE(max_rel_diff(run_cpu(fused, feeds).at("y"), run_cpu(b.g, feeds).at("y")), 1e-5);
}

TEST(FusePointwise, CpuEnginesKeepThePlainOps) {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {2, 3}));
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"a"}, {}, "relu"});
  m.graph.nodes.push_back(NodeSpec{"Neg", {"a"}, {"y"}, {}, "neg"});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {2, 3}));
  const std::string file = enginetest::write_model(::testing::TempDir() + "/kilnrt_pointwise_cpu.onnx", m.serialize());
  const std::vector<uint8_t> bytes = build_engine(file, BuildOptions{});
  const auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  std::vector<std::string> ops;
  for (const LayerInfo& l : engine->layers()) ops.push_back(l.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Relu", "Neg"}));
}

TEST(FusePointwise, DamagedProgramIsRefusedNamingTheNode) {
  ir::Node n;
  n.name = "broken_pw";
  n.op_type = "FusedPointwise";
  n.domain = "com.kilnrt";
  n.inputs = {"x"};
  n.outputs = {"y"};
  ops::nn::PwProgram p;
  p.num_inputs = 1;
  ops::nn::PwInstr in;
  in.op = ops::nn::kPwAdd;
  in.a = 0;
  in.b = 1;  // reads its own result: undefined
  p.code.push_back(in);
  ops::nn::write_pointwise_program(p, &n);
  try {
    ops::nn::read_pointwise_program(n);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("broken_pw"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reads register 1"), std::string::npos) << e.what();
  }
  n.attrs["program"].ints[0] = 999;  // unknown opcode
  n.attrs["program"].ints[2] = -1;
  EXPECT_THROW(ops::nn::read_pointwise_program(n), Error);
}

}  // namespace
