// --fp16 / --bf16 CUDA engines with sync points (runner_segments.cc): data-dependent shapes (NonZero,
// NonMaxSuppression), a device value read on the host (Reshape's shape) and control flow (If, Loop, Scan) in the
// segmented run with 16-bit storage. Host tests (no GPU): such plans are placed and accepted, their layers get the
// expected precision (16-bit layers, float32 islands for the data-dependent and control-flow ones) and they stay
// segmented. GPU tests: every graph in fp16 and in bf16 against the CPU float32 engine at the 16-bit tolerances
// (integer outputs exactly), one runner reused across runs with different shapes / counts. GPU tests skip with a
// message without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda_backend_test_util.h"
#include "dd_test_graph.h"
#include "graph_build_test_util.h"
#include "ops/nn/nn_test_util.h"

namespace kilnrt::cudatest {
namespace {

using backends::cuda::CudaPlan;
using backends::cuda::CudaRunner;
using ddtest::Net;
using graphtest::add_input;
using graphtest::add_node;
using graphtest::f32;
using graphtest::set_graph;
using graphtest::set_ints;
using graphtest::tensor_type;
using kilnrt::ops::nn::testing::random_tensor;
namespace kc = kilnrt::cuda;

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor boolean(bool v) {
  return Tensor::from_vector(std::vector<uint8_t>{v ? uint8_t(1) : uint8_t(0)}, DType::kBool, {});
}

const char* const kPrecisions[] = {"fp16", "bf16"};

// What `kilnrt build --fp16` / `--bf16` gives the optimized graph: every top-level node gets the precision (bodies
// of If / Loop / Scan keep none: they are float32 plans).
ir::Graph marked(ir::Graph g, const std::string& precision) {
  for (ir::Node& n : g.nodes) ddtest::set_string(n, backends::cuda::kPrecisionAttr, precision);
  return g;
}

// Tolerances of one 16-bit rounding of inputs, activations and outputs (a few roundings in a chain).
double atol_of(const std::string& p) { return p == "fp16" ? 4e-3 : 3e-2; }
double rtol_of(const std::string& p) { return p == "fp16" ? 4e-3 : 3e-2; }

std::string precision_of(const CudaPlan& plan, const std::string& node) {
  for (const auto& [name, p] : plan.precisions())
    if (name == node) return p;
  return "";
}

// ---- graphs --------------------------------------------------------------------------------------------------------

// x [6, 7] -> NonZero -> its column indices -> Gather(x, cols, axis 1) -> Relu; outputs y and the NonZero indices.
ir::Graph nonzero_gather_graph() {
  Net net;
  net.input("x", Tensor::zeros(DType::kFloat32, {6, 7}));
  net.constant("one", i64({1}, {}));
  net.node("NonZero", "nz", {"x"}, {"idx"});
  ddtest::set_int(net.node("Gather", "cols", {"idx", "one"}, {"c"}), "axis", 0);
  ddtest::set_int(net.node("Gather", "pick", {"x", "c"}, {"g"}), "axis", 1);
  net.node("Relu", "relu", {"g"}, {"y"});
  net.output("y").output("idx");
  return net.done();
}

// boxes [1, 6, 4] -> Relu -> NonMaxSuppression (max 3, IoU 0.5) -> the kept boxes' indices -> Gather of the kept
// boxes; outputs the selection and the kept boxes.
ir::Graph nms_graph() {
  Net net(11);
  net.input("boxes_in", Tensor::zeros(DType::kFloat32, {1, 6, 4}));
  net.input("scores", Tensor::zeros(DType::kFloat32, {1, 1, 6}));
  net.constant("max", i64({3}, {1}));
  net.constant("iou", f32({0.5f}, {1}));
  net.constant("two", i64({2}, {}));
  net.node("Relu", "clamp", {"boxes_in"}, {"boxes"});
  net.node("NonMaxSuppression", "nms", {"boxes", "scores", "max", "iou"}, {"sel"});
  ddtest::set_int(net.node("Gather", "box_index", {"sel", "two"}, {"k"}), "axis", 1);
  ddtest::set_int(net.node("Gather", "kept", {"boxes", "k"}, {"kept_boxes"}), "axis", 1);
  net.output("sel").output("kept_boxes");
  return net.done();
}

// y = Sigmoid(Reshape(Relu(x), s)) with s a graph input: a device value read on the host.
ir::Graph reshape_graph() {
  Net net;
  net.input("x", Tensor::zeros(DType::kFloat32, {2, 6}));
  net.input("s", i64({3, 4}, {2}));
  net.node("Relu", "relu", {"x"}, {"r"});
  net.node("Reshape", "rs", {"r", "s"}, {"z"});
  net.node("Sigmoid", "sig", {"z"}, {"y"});
  net.output("y");
  return net.done();
}

// v0p = v0 + x (16-bit layer); Loop(M, -, v0p) with body (i, c, v) -> (c, v + x, v * 0.5 + v) reading x from the
// outer scope; y = Relu(scan outputs).
ir::Graph loop16_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "M", DType::kInt64, {});
  add_input(g, "v0", DType::kFloat32, {3});
  add_input(g, "x", DType::kFloat32, {3});
  g.outputs = {"v_final", "y"};
  add_node(g, "Add", "pre", {"v0", "x"}, {"v0p"});
  graphtest::add_test_loop(g, /*trip=*/true, /*cond=*/false, "v0p");
  add_node(g, "Relu", "post", {"v_all"}, {"y"});
  passes::infer_shapes(g);
  return g;
}

// x2 = x * x (16-bit layer); y = If(c) { x2 + k } else { x2 - k } (x2, k from the outer scope); z = Neg(y).
ir::Graph if16_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "c", DType::kBool, {});
  add_input(g, "x", DType::kFloat32, {4});
  add_input(g, "k", DType::kFloat32, {1});
  g.outputs = {"z"};
  add_node(g, "Mul", "square", {"x", "x"}, {"x2"});
  auto branch = [](const std::string& op) {
    ir::Graph br;
    add_node(br, op, op + "_node", {"x2", "k"}, {"out"});
    br.outputs = {"out"};
    br.types["out"] = tensor_type(DType::kFloat32, {4});
    return br;
  };
  ir::Node& n = add_node(g, "If", "the_if", {"c"}, {"y"});
  set_graph(n, "then_branch", branch("Add"), 17);
  set_graph(n, "else_branch", branch("Sub"), 17);
  add_node(g, "Neg", "after", {"y"}, {"z"});
  passes::infer_shapes(g);
  return g;
}

// Scan (opset 11) over Tanh(x) [2, 4, 3] along axis 1; state s += slice; scan output s * slice.
ir::Graph scan16_graph() {
  ir::Graph g;
  g.opsets[""] = 11;
  add_input(g, "s0", DType::kFloat32, {2, 3});
  add_input(g, "x", DType::kFloat32, {2, 4, 3});
  g.outputs = {"s_final", "y"};
  add_node(g, "Tanh", "squash", {"x"}, {"xt"});
  ir::Graph b;
  add_input(b, "s", DType::kFloat32, {2, 3});
  add_input(b, "xs", DType::kFloat32, {2, 3});
  add_node(b, "Add", "acc", {"s", "xs"}, {"s_next"});
  add_node(b, "Mul", "prod", {"s_next", "xs"}, {"y_t"});
  b.outputs = {"s_next", "y_t"};
  b.types["s_next"] = tensor_type(DType::kFloat32, {2, 3});
  b.types["y_t"] = tensor_type(DType::kFloat32, {2, 3});
  ir::Node& n = add_node(g, "Scan", "the_scan", {"s0", "xt"}, {"s_final", "y"});
  set_graph(n, "body", std::move(b), 11);
  ddtest::set_int(n, "num_scan_inputs", 1);
  set_ints(n, "scan_input_axes", {1});
  passes::infer_shapes(g);
  return g;
}

// ---- host: placement and plans without a GPU -----------------------------------------------------------------------

TEST(CudaSegments16Host, DataDependentGraphsArePlacedIn16BitEngines) {
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    EXPECT_NO_THROW(CudaPlan::check_supported(marked(nonzero_gather_graph(), p)));
    EXPECT_NO_THROW(CudaPlan::check_supported(marked(nms_graph(), p)));
  }
}

TEST(CudaSegments16Host, DeviceShapeReadOnTheHostIsAcceptedAndStaysSegmented) {
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(reshape_graph(), p);
    CudaPlan plan(g, 0);  // no constant read by a device layer: nothing uploaded
    EXPECT_EQ(plan.sync_points(), 1);
    EXPECT_EQ(precision_of(plan, "relu"), p);
    EXPECT_EQ(precision_of(plan, "sig"), p);
    for (const auto& [name, tactic] : plan.tactics()) EXPECT_EQ(tactic.find("nhwc"), std::string::npos) << name;
    CudaRunner runner(plan);
    EXPECT_TRUE(runner.data_dependent());
    EXPECT_EQ(runner.arena_bytes_for({{2, 6}, {2}}), 0u);
  }
}

TEST(CudaSegments16Host, ControlFlowIsAcceptedAsFloat32Islands) {
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    struct Case {
      ir::Graph g;
      std::string cf, layer16;
    };
    std::vector<Case> cases;
    cases.push_back({marked(loop16_graph(), p), "the_loop", "pre"});
    cases.push_back({marked(if16_graph(), p), "the_if", "square"});
    cases.push_back({marked(scan16_graph(), p), "the_scan", "squash"});
    for (const Case& c : cases) {
      SCOPED_TRACE(c.cf);
      EXPECT_NO_THROW(CudaPlan::check_supported(c.g));
      CudaPlan plan(c.g, 0);
      EXPECT_GE(plan.sync_points(), 1);
      EXPECT_EQ(precision_of(plan, c.cf), "fp32");  // the node runs its float32 bodies: an island
      EXPECT_EQ(precision_of(plan, c.layer16), p);
    }
  }
}

// ---- GPU: against the CPU float32 engine -----------------------------------------------------------------------

// Runs `feeds` on the 16-bit session and on the CPU float32 engine; float outputs at the 16-bit tolerances.
void expect_matches_cpu(CudaSession& s, const std::string& p, const std::map<std::string, Tensor>& feeds) {
  const auto want = run_cpu(s.g, feeds);
  const auto got = s.run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE("output " + name);
    const bool exact = t.dtype() != DType::kFloat32;
    expect_tensors_close(got.at(name), t, exact ? 0 : atol_of(p), exact ? 0 : rtol_of(p));
  }
}

TEST(CudaSegments16, NonZeroGatherChain) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(nonzero_gather_graph(), p);
    CudaSession s(g);
    for (int phase : {0, 2, 5}) {  // different counts through one runner
      SCOPED_TRACE("phase " + std::to_string(phase));
      Tensor x = random_tensor({6, 7}, 40 + phase);
      for (int64_t i = 0; i < x.numel(); ++i)
        if (i % 3 == phase % 3 || i % 7 == phase) x.data<float>()[i] = 0.f;
      expect_matches_cpu(s, p, {{"x", x}});
    }
    EXPECT_GE(s.runner.sync_count(), 3u);  // one count read per run at least
  }
}

TEST(CudaSegments16, NonMaxSuppressionModel) {
  KILNRT_SKIP_WITHOUT_GPU();
  // The ONNX documentation's example (corner format): boxes 3, 0, 5 are kept; IoUs far from the threshold, so 16-bit
  // rounding of the coordinates and scores changes no decision.
  const Tensor boxes = f32(
      {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}, {1, 6, 4});
  const Tensor scores = f32({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(nms_graph(), p);
    CudaSession s(g);
    expect_matches_cpu(s, p, {{"boxes_in", boxes}, {"scores", scores}});
    const auto out = s.run({{"boxes_in", boxes}, {"scores", scores}});
    ASSERT_EQ(out.at("sel").shape(), (Shape{3, 3}));
    EXPECT_EQ(out.at("sel").data<int64_t>()[2], 3);
    EXPECT_EQ(out.at("kept_boxes").shape(), (Shape{1, 3, 4}));
  }
}

TEST(CudaSegments16, ReshapeWithDeviceComputedShape) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(reshape_graph(), p);
    CudaSession s(g);
    const Tensor x = random_tensor({2, 6}, 7);
    for (const Tensor& shape : {i64({3, 4}, {2}), i64({4, 3}, {2}), i64({12, 1}, {2}), i64({3, 4}, {2})}) {
      expect_matches_cpu(s, p, {{"x", x}, {"s", shape}});
      EXPECT_EQ(s.run({{"x", x}, {"s", shape}}).at("y").shape(),
                (Shape{shape.data<int64_t>()[0], shape.data<int64_t>()[1]}));
    }
  }
}

TEST(CudaSegments16, LoopWithFloatStateAndScanOutput) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(loop16_graph(), p);
    CudaSession s(g);
    for (int64_t m : {3, 1, 5, 3}) {
      SCOPED_TRACE("M " + std::to_string(m));
      expect_matches_cpu(s, p, {{"M", i64({m}, {})}, {"v0", f32({0.25f, -2, 3}, {3})}, {"x", f32({0.5f, -1, 2}, {3})}});
    }
    const auto out = s.run({{"M", i64({4}, {})}, {"v0", f32({1, 2, 3}, {3})}, {"x", f32({1, 1, 1}, {3})}});
    EXPECT_EQ(out.at("y").shape(), (Shape{4, 3}));
    EXPECT_EQ(out.at("v_final").data<float>()[0], 6.f);  // (1 + 1) + 4 * 1, exact in 16 bits
  }
}

TEST(CudaSegments16, IfWithFloatBranches) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(if16_graph(), p);
    CudaSession s(g);
    std::map<std::string, Tensor> feeds{{"x", f32({1.5f, -2, 0.3f, 4}, {4})}, {"k", f32({0.75f}, {1})}};
    for (bool c : {true, false, true}) {
      SCOPED_TRACE(c ? "then" : "else");
      feeds["c"] = boolean(c);
      expect_matches_cpu(s, p, feeds);
    }
    feeds["c"] = boolean(false);
    EXPECT_EQ(s.run(feeds).at("z").data<float>()[1], -3.25f);  // -(4 - 0.75): the else branch
  }
}

TEST(CudaSegments16, ScanOverA16BitActivation) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* p : kPrecisions) {
    SCOPED_TRACE(p);
    const ir::Graph g = marked(scan16_graph(), p);
    CudaSession s(g);
    for (uint32_t seed : {3u, 4u})
      expect_matches_cpu(s, p, {{"s0", random_tensor({2, 3}, seed)}, {"x", random_tensor({2, 4, 3}, seed + 10)}});
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
