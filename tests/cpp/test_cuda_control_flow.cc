// If / Loop / Scan on the CUDA backend (control_flow/control_flow_layers.cc). Host tests (no GPU needed): the
// placement of control-flow graphs (check_supported, a plan whose bodies upload nothing), refusals naming the body
// node, mismatched body signatures, --fp16 engines accepted (control flow as a float32 island). GPU tests against the
// CPU engine: If taking each branch with outer-scope reads, Loop with a trip count only / a condition only / both /
// zero iterations, scan outputs, Scan with reversed directions and other axes, the opset-8 batch form, an If nested in
// a Loop, and one runner reused across runs with different trip counts (sync counts as documented). GPU tests skip with
// a message without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_plan.h"
#include "cuda_backend_test_util.h"
#include "graph_build_test_util.h"
#include "ir/graph.h"
#include "kilnrt/error.h"
#include "passes/shape_inference.h"

namespace kilnrt::cudatest {
namespace {

using backends::cuda::CudaPlan;
using backends::cuda::CudaRunner;
namespace kc = kilnrt::cuda;

using graphtest::add_input;
using graphtest::add_node;
using graphtest::boolean;
using graphtest::f32;
using graphtest::i64;
using graphtest::set_graph;
using graphtest::set_int;
using graphtest::set_ints;
using graphtest::tensor_type;

Tensor ramp(Shape s, float start, float step) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

// y = If(c): then x2 + k, else x2 - k; x2 = x + x is an outer-scope value of both branches (k: a branch constant
// when `with_constant`, else the outer graph input `k`).
ir::Graph if_graph(bool with_constant) {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "c", DType::kBool, {});
  add_input(g, "x", DType::kFloat32, {3});
  if (!with_constant) add_input(g, "k", DType::kFloat32, {1});
  g.outputs = {"y"};
  add_node(g, "Add", "double", {"x", "x"}, {"x2"});
  auto branch = [&](const std::string& op) {
    ir::Graph b;
    b.name = op;
    if (with_constant) b.constants["k"] = f32({10.f}, {1});
    add_node(b, op, op + "_node", {"x2", "k"}, {"out"});
    b.outputs = {"out"};
    b.types["out"] = tensor_type(DType::kFloat32, {3});
    return b;
  };
  ir::Node& n = add_node(g, "If", "the_if", {"c"}, {"y"});
  set_graph(n, "then_branch", branch("Add"));
  set_graph(n, "else_branch", branch("Sub"));
  passes::infer_shapes(g);
  return g;
}

// Loop(M, cond, v0) with body (i, c_in, v) -> (c_out, v + x, v + v): x [3] is read from the outer scope.
// `trip`: M is an input; `cond`: the condition is an input and the body computes c_out = i < lim (lim an outer
// value), else the body passes c_in through.
ir::Graph loop_graph(bool trip, bool cond) {
  ir::Graph g;
  g.opsets[""] = 17;
  if (trip) add_input(g, "M", DType::kInt64, {});
  if (cond) {
    add_input(g, "c", DType::kBool, {});
    add_input(g, "lim", DType::kInt64, {});
  }
  add_input(g, "v0", DType::kFloat32, {3});
  add_input(g, "x", DType::kFloat32, {3});
  g.outputs = {"v_final", "v_all"};
  graphtest::add_test_loop(g, trip, cond, "v0");
  passes::infer_shapes(g);
  return g;
}

// Scan (opset 11) over x [2, 4, 3] along axis 1, reversed; state s [2, 3] += slice; scan output y = s * slice,
// gathered along output axis `out_axis`, reversed when `out_reverse`.
ir::Graph scan_graph(int64_t out_axis, bool out_reverse) {
  ir::Graph g;
  g.opsets[""] = 11;
  add_input(g, "s0", DType::kFloat32, {2, 3});
  add_input(g, "x", DType::kFloat32, {2, 4, 3});
  g.outputs = {"s_final", "y"};
  ir::Graph b;
  b.name = "scan_body";
  add_input(b, "s", DType::kFloat32, {2, 3});
  add_input(b, "xs", DType::kFloat32, {2, 3});
  add_node(b, "Add", "acc", {"s", "xs"}, {"s_next"});
  add_node(b, "Mul", "prod", {"s_next", "xs"}, {"y_t"});
  b.outputs = {"s_next", "y_t"};
  b.types["s_next"] = tensor_type(DType::kFloat32, {2, 3});
  b.types["y_t"] = tensor_type(DType::kFloat32, {2, 3});
  ir::Node& n = add_node(g, "Scan", "the_scan", {"s0", "x"}, {"s_final", "y"});
  set_graph(n, "body", std::move(b), 11);
  set_int(n, "num_scan_inputs", 1);
  set_ints(n, "scan_input_axes", {1});
  set_ints(n, "scan_input_directions", {1});
  set_ints(n, "scan_output_axes", {out_axis});
  set_ints(n, "scan_output_directions", {out_reverse ? 1 : 0});
  passes::infer_shapes(g);
  return g;
}

// Scan-8 (batch axis 0, scan axis 1): x [B, T, 2], state s [B, 2] += slice; scan output the running sum.
ir::Graph scan8_graph() {
  ir::Graph g;
  g.opsets[""] = 8;
  add_input(g, "s0", DType::kFloat32, {3, 2});
  add_input(g, "x", DType::kFloat32, {3, 5, 2});
  g.outputs = {"s_final", "y"};
  ir::Graph b;
  b.name = "scan8_body";
  add_input(b, "s", DType::kFloat32, {2});
  add_input(b, "xs", DType::kFloat32, {2});
  add_node(b, "Add", "acc", {"s", "xs"}, {"s_next"});
  add_node(b, "Identity", "copy", {"s_next"}, {"y_t"});
  b.outputs = {"s_next", "y_t"};
  b.types["s_next"] = tensor_type(DType::kFloat32, {2});
  b.types["y_t"] = tensor_type(DType::kFloat32, {2});
  ir::Node& n = add_node(g, "Scan", "scan8", {"", "s0", "x"}, {"s_final", "y"});
  set_graph(n, "body", std::move(b), 8);
  set_int(n, "num_scan_inputs", 1);
  set_ints(n, "directions", {1});
  passes::infer_shapes(g);
  return g;
}

// Loop(M, -, v0) whose body holds an If: v_next = If(i < 2) then v + x else v * x; x from the outermost scope, v
// from the Loop body; the If's result is also the scan output.
ir::Graph nested_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "M", DType::kInt64, {});
  add_input(g, "v0", DType::kFloat32, {3});
  add_input(g, "x", DType::kFloat32, {3});
  g.outputs = {"v_final", "v_all"};
  g.constants["two"] = Tensor::from_vector(std::vector<int64_t>{2}, DType::kInt64, {});
  auto branch = [](const std::string& op) {
    ir::Graph br;
    br.name = op;
    add_node(br, op, op + "_branch_node", {"v", "x"}, {"r"});
    br.outputs = {"r"};
    br.types["r"] = tensor_type(DType::kFloat32, {3});
    return br;
  };
  ir::Graph b;
  b.name = "outer_body";
  add_input(b, "i", DType::kInt64, {});
  add_input(b, "c_in", DType::kBool, {});
  add_input(b, "v", DType::kFloat32, {3});
  add_node(b, "Less", "early", {"i", "two"}, {"is_early"});
  ir::Node& inner = add_node(b, "If", "inner_if", {"is_early"}, {"v_next"});
  set_graph(inner, "then_branch", branch("Add"));
  set_graph(inner, "else_branch", branch("Mul"));
  add_node(b, "Identity", "keep", {"v_next"}, {"v_scan"});
  b.outputs = {"c_in", "v_next", "v_scan"};
  b.types["v_next"] = tensor_type(DType::kFloat32, {3});
  b.types["v_scan"] = tensor_type(DType::kFloat32, {3});
  ir::Node& n = add_node(g, "Loop", "outer_loop", {"M", "", "v0"}, {"v_final", "v_all"});
  set_graph(n, "body", std::move(b));
  passes::infer_shapes(g);
  return g;
}

// ---- host: placement without a GPU -----------------------------------------------------------------------------

// z = Transpose(If(c) { x + x } else { Neg(x) }) with branch results left undeclared, as in ONNX function-expanded
// bodies (test_linear_attention_*_expanded): the If's output dtype comes from the branches (passes/control_flow_types).
ir::Graph undeclared_if_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "c", DType::kBool, {});
  add_input(g, "x", DType::kFloat32, {2, 3});
  g.outputs = {"z"};
  ir::Graph then_b, else_b;
  add_node(then_b, "Add", "twice", {"x", "x"}, {"t"});
  then_b.outputs = {"t"};
  add_node(else_b, "Neg", "negate", {"x"}, {"e"});
  else_b.outputs = {"e"};
  ir::Node& n = add_node(g, "If", "the_if", {"c"}, {"y"});
  set_graph(n, "then_branch", std::move(then_b));
  set_graph(n, "else_branch", std::move(else_b));
  add_node(g, "Transpose", "after_if", {"y"}, {"z"});
  passes::infer_shapes(g);
  return g;
}

// float16 tensors in a float32 engine with a sync point (test_range_float16_*_expanded): Loop(M, , v0) over float16
// values, body (undeclared) v + x and scan output v + v; y = Elu(scan outputs), which runs as a float32 island of
// the segmented run.
ir::Graph float16_loop_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  add_input(g, "M", DType::kInt64, {});
  add_input(g, "v0", DType::kFloat16, {3});
  add_input(g, "x", DType::kFloat16, {3});
  g.outputs = {"v_final", "y"};
  ir::Graph b;
  b.inputs = {"i", "c_in", "v"};
  add_node(b, "Add", "step", {"v", "x"}, {"v_next"});
  add_node(b, "Add", "twice", {"v", "v"}, {"v_scan"});
  b.outputs = {"c_in", "v_next", "v_scan"};
  ir::Node& n = add_node(g, "Loop", "the_loop", {"M", "", "v0"}, {"v_final", "v_all"});
  set_graph(n, "body", std::move(b));
  add_node(g, "Elu", "elu16", {"v_all"}, {"y"});
  passes::infer_shapes(g);
  return g;
}

std::string tactic_of(const CudaPlan& plan, const std::string& node) {
  for (const auto& [name, tactic] : plan.tactics())
    if (name == node) return tactic;
  return "";
}

TEST(CudaControlFlowHost, PlacementAcceptsIfLoopScanWithoutGpu) {
  EXPECT_NO_THROW(CudaPlan::check_supported(if_graph(true)));
  EXPECT_NO_THROW(CudaPlan::check_supported(loop_graph(true, true)));
  EXPECT_NO_THROW(CudaPlan::check_supported(loop_graph(false, true)));
  EXPECT_NO_THROW(CudaPlan::check_supported(scan_graph(2, true)));
  EXPECT_NO_THROW(CudaPlan::check_supported(scan8_graph()));
  EXPECT_NO_THROW(CudaPlan::check_supported(nested_graph()));
}

TEST(CudaControlFlowHost, ControlFlowNodesAreSyncPointsWithOuterScopeInputs) {
  // Bodies without constants upload nothing: the plan is built without a GPU.
  const ir::Graph g = loop_graph(true, true);
  CudaPlan plan(g, 0);
  EXPECT_EQ(plan.sync_points(), 1);
  EXPECT_EQ(tactic_of(plan, "the_loop"), "cuda:control-flow:loop");
  CudaRunner runner(plan);
  EXPECT_TRUE(runner.data_dependent());
  const ir::Graph s = scan_graph(0, false);
  CudaPlan scan_plan(s, 0);
  EXPECT_EQ(tactic_of(scan_plan, "the_scan"), "cuda:control-flow:scan");
  const ir::Graph i = if_graph(false);
  CudaPlan if_plan(i, 0);
  EXPECT_EQ(tactic_of(if_plan, "the_if"), "cuda:control-flow:if");
}

TEST(CudaControlFlowHost, BodyNodeWithoutCudaLayerIsNamed) {
  ir::Graph g = if_graph(false);
  ir::Graph& then_branch = *g.nodes[1].attrs["then_branch"].g;
  then_branch.nodes[0].domain = "com.example";
  then_branch.nodes[0].op_type = "Frobnicate";
  try {
    CudaPlan::check_supported(g);
    FAIL() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    const std::string what = e.what();
    EXPECT_NE(what.find("the_if"), std::string::npos) << what;
    EXPECT_NE(what.find("Add_node"), std::string::npos) << what;  // the body node
    EXPECT_NE(what.find("then_branch"), std::string::npos) << what;
  }
}

TEST(CudaControlFlowHost, MismatchedBodySignaturesAreClearErrors) {
  ir::Graph g = if_graph(false);
  g.nodes[1].attrs["else_branch"].g->outputs.push_back("x2");
  try {
    CudaPlan plan(g, 0);
    FAIL() << "expected kInvalidModel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("else_branch has 2 outputs, the node 1"), std::string::npos) << e.what();
  }
  ir::Graph l = loop_graph(true, false);
  add_input(*l.nodes[0].attrs["body"].g, "extra", DType::kFloat32, {3});
  try {
    CudaPlan plan(l, 0);
    FAIL() << "expected kInvalidModel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("Loop body takes 4 inputs, expected 3"), std::string::npos) << e.what();
  }
}

TEST(CudaControlFlowHost, UndeclaredBodyOutputsAreTypedForTheirConsumers) {
  const ir::Graph g = undeclared_if_graph();
  ASSERT_NE(g.type_of("z"), nullptr);
  EXPECT_EQ(g.type_of("z")->dtype, DType::kFloat32);
  EXPECT_NO_THROW(CudaPlan::check_supported(g));  // was: Transpose 'after_if': unknown dtype
}

TEST(CudaControlFlowHost, Float32IslandsInPlansWithSyncPoints) {
  const ir::Graph g = float16_loop_graph();
  EXPECT_EQ(g.type_of("y")->dtype, DType::kFloat16);
  CudaPlan plan(g, 0);  // was refused: an island needed an engine without sync points
  EXPECT_EQ(plan.sync_points(), 1);
  EXPECT_NE(tactic_of(plan, "elu16").find("+fp32-island"), std::string::npos) << tactic_of(plan, "elu16");
}

TEST(CudaControlFlowHost, ExternalWorkspaceSmallerThanTheLayersNeedIsRefused) {
  const ir::Graph g = loop_graph(true, false);
  CudaPlan plan(g, 0);
  CudaRunner runner(plan);
  try {
    runner.use_external_workspace(reinterpret_cast<void*>(uintptr_t(4096)), 1024);
    FAIL() << "expected kInternal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("external workspace"), std::string::npos) << e.what();
  }
}

TEST(CudaControlFlowHost, SixteenBitEnginesAcceptControlFlowAsFloat32Island) {
  ir::Graph g = loop_graph(true, false);
  ir::Attribute p;
  p.kind = ir::Attribute::Kind::kString;
  p.s = "fp16";
  g.nodes[0].attrs[backends::cuda::kPrecisionAttr] = p;  // what --fp16 gives the node
  CudaPlan plan(g, 0);  // the node runs its float32 bodies in the segmented run (test_cuda_segments16.cc)
  for (const auto& [name, precision] : plan.precisions())
    if (name == "the_loop") EXPECT_EQ(precision, "fp32");
}

// ---- GPU: against the CPU engine -------------------------------------------------------------------------------

// Runs `feeds` on the session and on the CPU engine and compares every output.
void expect_matches_cpu(CudaSession& s, const std::map<std::string, Tensor>& feeds) {
  const auto want = run_cpu(s.g, feeds);
  const auto got = s.run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE("output " + name);
    expect_tensors_close(got.at(name), t, 1e-6, 1e-6);
  }
}

TEST(CudaControlFlow, IfTakesEachBranchAndReadsOuterScope) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool with_constant : {true, false}) {
    const ir::Graph g = if_graph(with_constant);
    CudaSession s(g);
    std::map<std::string, Tensor> feeds{{"x", f32({1, 2, 3}, {3})}};
    if (!with_constant) feeds["k"] = f32({10.f}, {1});
    for (bool c : {true, false, true}) {
      SCOPED_TRACE(std::string("cond ") + (c ? "true" : "false"));
      feeds["c"] = boolean(c);
      expect_matches_cpu(s, feeds);
    }
    const auto y = s.run(feeds).at("y");
    EXPECT_EQ(y.data<float>()[2], 16.f);   // 3 + 3 + 10: the then branch
    EXPECT_EQ(s.runner.sync_count(), 4u);  // one host read of the device condition per run
  }
}

TEST(CudaControlFlow, LoopWithTripCountOnly) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = loop_graph(true, false);
  CudaSession s(g);
  for (int64_t m : {3, 1, 5, 3}) {
    SCOPED_TRACE("M " + std::to_string(m));
    expect_matches_cpu(s, {{"M", i64(m)}, {"v0", f32({1, 2, 3}, {3})}, {"x", f32({0.5f, -1, 2}, {3})}});
  }
  const auto out = s.run({{"M", i64(4)}, {"v0", f32({1, 2, 3}, {3})}, {"x", f32({1, 1, 1}, {3})}});
  EXPECT_EQ(out.at("v_all").shape(), (Shape{4, 3}));
  EXPECT_EQ(out.at("v_final").data<float>()[0], 5.f);
}

TEST(CudaControlFlow, LoopWithConditionOnlyAndBoth) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::map<std::string, Tensor> base{{"c", boolean(true)}, {"v0", ramp({3}, 1, 1)}, {"x", ramp({3}, -1, 0.5f)}};
  {
    const ir::Graph g = loop_graph(false, true);
    CudaSession s(g);
    for (int64_t lim : {0, 2, 6}) {
      SCOPED_TRACE("lim " + std::to_string(lim));
      auto feeds = base;
      feeds["lim"] = i64(lim);
      expect_matches_cpu(s, feeds);
    }
    // Iterations: lim + 1 each; host reads: the device condition input, then the body's condition per iteration.
    EXPECT_EQ(s.runner.sync_count(), 3u * 1 + (1 + 3 + 7));
    auto feeds = base;
    feeds["lim"] = i64(2);
    feeds["c"] = boolean(false);  // never enters the loop: zero iterations
    expect_matches_cpu(s, feeds);
  }
  {
    const ir::Graph g = loop_graph(true, true);
    CudaSession s(g);
    for (auto [m, lim] : std::vector<std::pair<int64_t, int64_t>>{{2, 10}, {10, 3}, {0, 3}}) {
      SCOPED_TRACE("M " + std::to_string(m) + " lim " + std::to_string(lim));
      auto feeds = base;
      feeds["M"] = i64(m);
      feeds["lim"] = i64(lim);
      expect_matches_cpu(s, feeds);
    }
  }
}

TEST(CudaControlFlow, LoopWithZeroIterationsGivesEmptyScanOutputs) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = loop_graph(true, false);
  CudaSession s(g);
  const std::map<std::string, Tensor> feeds{{"M", i64(0)}, {"v0", f32({1, 2, 3}, {3})}, {"x", f32({1, 1, 1}, {3})}};
  expect_matches_cpu(s, feeds);
  const auto out = s.run(feeds);
  EXPECT_EQ(out.at("v_all").shape(), (Shape{0, 3}));
  EXPECT_EQ(out.at("v_final").data<float>()[2], 3.f);
}

TEST(CudaControlFlow, ScanWithReversedDirectionsAndAxes) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (int64_t axis : {0, 1, 2, -1}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE("output axis " + std::to_string(axis) + (reverse ? " reversed" : ""));
      const ir::Graph g = scan_graph(axis, reverse);
      CudaSession s(g);
      expect_matches_cpu(s, {{"s0", ramp({2, 3}, 0.5f, 0.25f)}, {"x", ramp({2, 4, 3}, -2, 0.125f)}});
      EXPECT_EQ(s.runner.sync_count(), 0u);  // the iteration count comes from shapes
    }
  }
}

TEST(CudaControlFlow, ScanOpset8BatchForm) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = scan8_graph();
  CudaSession s(g);
  expect_matches_cpu(s, {{"s0", ramp({3, 2}, 1, 1)}, {"x", ramp({3, 5, 2}, 0, 0.5f)}});
  const auto out = s.run({{"s0", ramp({3, 2}, 1, 1)}, {"x", ramp({3, 5, 2}, 0, 0.5f)}});
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 5, 2}));
}

TEST(CudaControlFlow, IfNestedInLoop) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = nested_graph();
  CudaSession s(g);
  for (int64_t m : {4, 1, 0, 4}) {
    SCOPED_TRACE("M " + std::to_string(m));
    expect_matches_cpu(s, {{"M", i64(m)}, {"v0", f32({1, -2, 3}, {3})}, {"x", f32({2, 0.5f, -1}, {3})}});
  }
}

TEST(CudaControlFlow, IfWithUndeclaredBranchOutputsFeedsATranspose) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = undeclared_if_graph();
  CudaSession s(g);
  for (bool c : {true, false}) {
    SCOPED_TRACE(std::string("cond ") + (c ? "true" : "false"));
    expect_matches_cpu(s, {{"c", boolean(c)}, {"x", ramp({2, 3}, -1, 0.75f)}});
  }
}

// float16 -> float32 values for comparisons at 16-bit tolerance.
Tensor widen16(const Tensor& h) {
  Tensor f = Tensor::empty(DType::kFloat32, h.shape());
  for (int64_t i = 0; i < h.numel(); ++i) f.data<float>()[i] = half_to_float(h.data<uint16_t>()[i]);
  return f;
}
Tensor half(std::vector<float> v) {
  Tensor h = Tensor::empty(DType::kFloat16, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) h.data<uint16_t>()[i] = float_to_half(v[i]);
  return h;
}

TEST(CudaControlFlow, Float16LoopWithFloat32IslandInASegmentedRun) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = float16_loop_graph();
  CudaSession s(g);
  for (int64_t m : {3, 1, 4}) {
    SCOPED_TRACE("M " + std::to_string(m));
    const std::map<std::string, Tensor> feeds{
        {"M", i64(m)}, {"v0", half({-2.5f, 0.25f, 1.5f})}, {"x", half({0.5f, -0.75f, 0.125f})}};
    const auto want = run_cpu(g, feeds);
    const auto got = s.run(feeds);
    for (const char* name : {"v_final", "y"}) {
      SCOPED_TRACE(name);
      ASSERT_EQ(got.at(name).dtype(), DType::kFloat16);
      expect_tensors_close(widen16(got.at(name)), widen16(want.at(name)), 2e-3, 2e-3);
    }
    EXPECT_EQ(got.at("y").shape(), (Shape{m, 3}));
  }
}

// Body runners run over their parent context's workspace (control_flow/control_flow_layers.cc); here the parent's is
// itself an external one, so the whole Loop (parent and body) allocates no workspace of its own.
TEST(CudaControlFlow, LoopOverAnExternalWorkspace) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = loop_graph(true, true);
  const std::map<std::string, Tensor> feeds{
      {"M", i64(5)}, {"c", boolean(true)}, {"lim", i64(3)}, {"v0", ramp({3}, 1, 1)}, {"x", ramp({3}, -1, 0.5f)}};
  size_t own = 0;
  {
    CudaSession s(g);
    expect_matches_cpu(s, feeds);
    own = s.runner.device_memory_bytes();
  }
  CudaSession s(g);
  kc::DeviceBuffer ws(0, backends::cuda::kWorkspaceBytes);
  s.runner.use_external_workspace(ws.data(), ws.size());
  for (int run = 0; run < 2; ++run) expect_matches_cpu(s, feeds);
  EXPECT_EQ(own - s.runner.device_memory_bytes(), backends::cuda::kWorkspaceBytes);
}

}  // namespace
}  // namespace kilnrt::cudatest
