// Control flow on the CPU backend (src/ops/control): If, Loop and Scan with hand-built graphs run by CpuPlan,
// outer-scope values read by the bodies, and the shape functions.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"
#include "kilnrt/error.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"
#include "passes/shape_inference.h"

using namespace kilnrt;

namespace {

ir::Node make_node(const std::string& name, const std::string& op, std::vector<std::string> in,
                   std::vector<std::string> out) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

void set_graph(ir::Node& n, const std::string& attr, ir::Graph g) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(g));
  n.attrs[attr] = a;
}

void set_ints(ir::Node& n, const std::string& attr, std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  n.attrs[attr] = a;
}

void set_int(ir::Node& n, const std::string& attr, int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  n.attrs[attr] = a;
}

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, DType::kFloat32, s); }
Tensor i64(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, DType::kInt64, {}); }
Tensor boolean(bool v) {
  Tensor t = Tensor::empty(DType::kBool, {});
  t.data<bool>()[0] = v;
  return t;
}
std::vector<float> values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
ir::TensorType type(DType dt, ir::SymShape s) {
  ir::TensorType t;
  t.dtype = dt;
  t.has_shape = true;
  t.shape = std::move(s);
  return t;
}

// Outer: x2 = Add(x, x); y = If(c) then x2 + 10 else x2 - 10. The branches read x2 from the outer scope.
ir::Graph if_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"c", "x"};
  g.outputs = {"y"};
  g.types["c"] = type(DType::kBool, {});
  g.types["x"] = type(DType::kFloat32, {3});
  g.nodes.push_back(make_node("double", "Add", {"x", "x"}, {"x2"}));
  auto branch = [](const std::string& op) {
    ir::Graph b;
    b.name = op;
    b.opsets[""] = 17;
    b.constants["k"] = Tensor::from_vector(std::vector<float>{10.f}, DType::kFloat32, {1});
    b.nodes.push_back(make_node(op + "_node", op, {"x2", "k"}, {"out"}));
    b.outputs = {"out"};
    b.types["out"] = type(DType::kFloat32, {3});
    return b;
  };
  ir::Node n = make_node("the_if", "If", {"c"}, {"y"});
  set_graph(n, "then_branch", branch("Add"));
  set_graph(n, "else_branch", branch("Sub"));
  g.nodes.push_back(n);
  return g;
}

TEST(OpsControl, IfPicksEachBranchAndReadsOuterScope) {
  ir::Graph g = if_graph();
  backends::cpu::CpuPlan plan(g);
  const Tensor x = f32({1, 2, 3}, {3});
  auto yes = plan.run({{"c", boolean(true)}, {"x", x}});
  EXPECT_EQ(values(yes.at("y")), (std::vector<float>{12, 14, 16}));
  auto no = plan.run({{"c", boolean(false)}, {"x", x}});
  EXPECT_EQ(values(no.at("y")), (std::vector<float>{-8, -6, -4}));
  EXPECT_EQ(backends::cpu::subgraph_free_values(g.nodes[1]), (std::vector<std::string>{"x2"}));
}

TEST(OpsControl, IfShapeFunctionMergesBranches) {
  ir::Graph g = if_graph();
  passes::infer_shapes(g);
  const ir::TensorType* y = g.type_of("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->dtype, DType::kFloat32);
  ASSERT_TRUE(y->has_shape);
  EXPECT_EQ(y->shape, (ir::SymShape{3}));
  // Branches disagreeing on a dim: that dim becomes unknown.
  ir::Graph h = if_graph();
  h.nodes[1].attrs["else_branch"].g->types["out"] = type(DType::kFloat32, {4});
  passes::infer_shapes(h);
  ASSERT_TRUE(h.type_of("y")->has_shape);
  EXPECT_FALSE(h.type_of("y")->shape[0].known());
}

// Loop: s += step each iteration (step from the outer scope), scan output = s after each iteration.
// With `limit`, the body's condition is s < 5 (early exit).
ir::Graph loop_graph(bool with_trip_count, bool early_exit) {
  ir::Graph g;
  g.opsets[""] = 16;
  g.inputs = {"M", "cond", "s0", "step"};
  g.outputs = {"s_final", "s_all"};
  g.types["M"] = type(DType::kInt64, {});
  g.types["cond"] = type(DType::kBool, {});
  g.types["s0"] = type(DType::kFloat32, {1});
  g.types["step"] = type(DType::kFloat32, {1});
  ir::Graph body;
  body.name = "loop_body";
  body.opsets[""] = 16;
  body.inputs = {"i", "c_in", "s"};
  body.types["i"] = type(DType::kInt64, {});
  body.types["c_in"] = type(DType::kBool, {});
  body.types["s"] = type(DType::kFloat32, {1});
  body.nodes.push_back(make_node("acc", "Add", {"s", "step"}, {"s_out"}));
  if (early_exit) {
    body.constants["limit"] = Tensor::from_vector(std::vector<float>{5.f}, DType::kFloat32, {});
    body.nodes.push_back(make_node("below", "Less", {"s_out", "limit"}, {"c_vec"}));
    body.constants["axes"] = Tensor::from_vector(std::vector<int64_t>{0}, DType::kInt64, {1});
    body.nodes.push_back(make_node("to_scalar", "Squeeze", {"c_vec", "axes"}, {"c_out"}));
  } else {
    body.nodes.push_back(make_node("keep", "Identity", {"c_in"}, {"c_out"}));
  }
  body.nodes.push_back(make_node("emit", "Identity", {"s_out"}, {"scan"}));
  body.outputs = {"c_out", "s_out", "scan"};
  body.types["s_out"] = type(DType::kFloat32, {1});
  body.types["scan"] = type(DType::kFloat32, {1});
  ir::Node n = make_node("the_loop", "Loop", {with_trip_count ? "M" : "", "cond", "s0"}, {"s_final", "s_all"});
  set_graph(n, "body", body);
  g.nodes.push_back(n);
  return g;
}

TEST(OpsControl, LoopSumsWithTripCount) {
  ir::Graph g = loop_graph(true, false);
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run({{"M", i64(4)}, {"cond", boolean(true)}, {"s0", f32({0}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{8}));
  EXPECT_EQ(out.at("s_all").shape(), (Shape{4, 1}));
  EXPECT_EQ(values(out.at("s_all")), (std::vector<float>{2, 4, 6, 8}));
  // Zero trips: the initial value comes back and the scan output is empty.
  auto none = plan.run({{"M", i64(0)}, {"cond", boolean(true)}, {"s0", f32({7}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(none.at("s_final")), (std::vector<float>{7}));
  EXPECT_EQ(none.at("s_all").shape(), (Shape{0, 1}));
  // A false initial condition runs no iteration either.
  auto off = plan.run({{"M", i64(5)}, {"cond", boolean(false)}, {"s0", f32({1}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(off.at("s_final")), (std::vector<float>{1}));
}

TEST(OpsControl, LoopStopsOnCondition) {
  ir::Graph g = loop_graph(false, true);
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run({{"M", i64(100)}, {"cond", boolean(true)}, {"s0", f32({0}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{6}));
  EXPECT_EQ(values(out.at("s_all")), (std::vector<float>{2, 4, 6}));
  // With a trip count smaller than the exit point, the trip count wins.
  ir::Graph both = loop_graph(true, true);
  backends::cpu::CpuPlan plan2(both);
  auto two = plan2.run({{"M", i64(2)}, {"cond", boolean(true)}, {"s0", f32({0}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(two.at("s_final")), (std::vector<float>{4}));
}

TEST(OpsControl, LoopShapeFunction) {
  ir::Graph g = loop_graph(true, false);
  passes::infer_shapes(g);
  EXPECT_EQ(g.type_of("s_final")->shape, (ir::SymShape{1}));
  const ir::TensorType* all = g.type_of("s_all");
  ASSERT_TRUE(all->has_shape);
  ASSERT_EQ(all->shape.size(), 2u);
  EXPECT_FALSE(all->shape[0].known());
  EXPECT_EQ(all->shape[1], ir::Dim(1));
}

TEST(OpsControl, LoopBodyMayHoldSequenceValues) {
  // Sequence values inside bodies run on the CPU (tests/cpp/test_sequence_ops.cc covers them in depth).
  ir::Graph g = loop_graph(true, false);
  g.nodes[0].attrs["body"].g->nodes.insert(g.nodes[0].attrs["body"].g->nodes.begin(),
                                           make_node("seq", "SequenceEmpty", {}, {"unused_seq"}));
  backends::cpu::CpuPlan p(g);
  auto out = p.run({{"M", i64(1)}, {"cond", boolean(true)}, {"s0", f32({0}, {1})}, {"step", f32({2}, {1})}});
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{2}));
}

// Scan: state s (2 floats) += x[t]; scan output y[t] = s.
ir::Graph scan_graph(int64_t in_dir, int64_t out_dir, int64_t out_axis) {
  ir::Graph g;
  g.opsets[""] = 16;
  g.inputs = {"s0", "x"};
  g.outputs = {"s_final", "y"};
  g.types["s0"] = type(DType::kFloat32, {2});
  g.types["x"] = type(DType::kFloat32, {3, 2});
  ir::Graph body;
  body.name = "scan_body";
  body.opsets[""] = 16;
  body.inputs = {"s", "xt"};
  body.types["s"] = type(DType::kFloat32, {2});
  body.types["xt"] = type(DType::kFloat32, {2});
  body.nodes.push_back(make_node("acc", "Add", {"s", "xt"}, {"s_out"}));
  body.nodes.push_back(make_node("emit", "Identity", {"s_out"}, {"yt"}));
  body.outputs = {"s_out", "yt"};
  body.types["s_out"] = type(DType::kFloat32, {2});
  body.types["yt"] = type(DType::kFloat32, {2});
  ir::Node n = make_node("the_scan", "Scan", {"s0", "x"}, {"s_final", "y"});
  set_graph(n, "body", body);
  set_int(n, "num_scan_inputs", 1);
  set_ints(n, "scan_input_directions", {in_dir});
  set_ints(n, "scan_output_directions", {out_dir});
  set_ints(n, "scan_output_axes", {out_axis});
  g.nodes.push_back(n);
  return g;
}

const std::map<std::string, Tensor> scan_inputs() {
  return {{"s0", f32({0, 0}, {2})}, {"x", f32({1, 2, 3, 4, 5, 6}, {3, 2})}};
}

TEST(OpsControl, ScanCumulativeSumForward) {
  ir::Graph g = scan_graph(0, 0, 0);
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run(scan_inputs());
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{9, 12}));
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out.at("y")), (std::vector<float>{1, 2, 4, 6, 9, 12}));
}

TEST(OpsControl, ScanCumulativeSumReverse) {
  ir::Graph g = scan_graph(1, 0, 0);
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run(scan_inputs());
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{9, 12}));
  EXPECT_EQ(values(out.at("y")), (std::vector<float>{5, 6, 8, 10, 9, 12}));
  // Reverse output direction as well: the last iteration's value comes first.
  ir::Graph rr = scan_graph(1, 1, 0);
  backends::cpu::CpuPlan plan2(rr);
  EXPECT_EQ(values(plan2.run(scan_inputs()).at("y")), (std::vector<float>{9, 12, 8, 10, 5, 6}));
}

TEST(OpsControl, ScanOutputAxisAndShapeFunction) {
  ir::Graph g = scan_graph(0, 0, 1);
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run(scan_inputs());
  EXPECT_EQ(out.at("y").shape(), (Shape{2, 3}));
  EXPECT_EQ(values(out.at("y")), (std::vector<float>{1, 4, 9, 2, 6, 12}));
  passes::infer_shapes(g);
  EXPECT_EQ(g.type_of("s_final")->shape, (ir::SymShape{2}));
  EXPECT_EQ(g.type_of("y")->shape, (ir::SymShape{2, 3}));
}

// Fuzz finding (onnx_build, at ~410,000 runs): Scan-8 whose scan input has a shorter batch axis
// than the first input read past it (ASan heap-buffer-overflow in slice_axis); input
// tests/fixtures/fuzz/onnx_build/scan8_short_batch_input. It must be a clear error naming the node and input.
TEST(OpsControl, Scan8InputsMustShareTheBatchAxis) {
  ir::Graph g = scan_graph(0, 0, 0);
  g.opsets[""] = 8;
  g.nodes[0].attrs.erase("scan_input_directions");
  g.nodes[0].attrs.erase("scan_output_directions");
  g.nodes[0].attrs.erase("scan_output_axes");
  g.nodes[0].inputs = {"", "s0", "x"};
  g.nodes[0].attrs["body"].g->opsets[""] = 8;
  g.types["s0"] = type(DType::kFloat32, {2, 2});
  g.types["x"] = type(DType::kFloat32, {2, 3, 2});
  backends::cpu::CpuPlan plan(g);
  // batch 2: two independent scans of 3 steps
  auto out =
      plan.run({{"s0", f32({0, 0, 10, 10}, {2, 2})}, {"x", f32({1, 2, 3, 4, 5, 6, 1, 1, 1, 1, 1, 1}, {2, 3, 2})}});
  EXPECT_EQ(values(out.at("s_final")), (std::vector<float>{9, 12, 13, 13}));
  EXPECT_EQ(out.at("y").shape(), (Shape{2, 3, 2}));
  try {
    plan.run({{"s0", f32({0, 0, 10, 10}, {2, 2})}, {"x", f32({1, 2, 3, 4, 5, 6}, {1, 3, 2})}});
    FAIL() << "expected an error for the short batch";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("the_scan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch axis"), std::string::npos) << e.what();
  }
}

TEST(OpsControl, RegisteredWithKernelsAndShapeFunctions) {
  for (const char* op : {"If", "Loop", "Scan"}) {
    const ops::OpSchema* s = ops::OpRegistry::instance().find("", op, 16);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_TRUE(static_cast<bool>(s->cpu) && static_cast<bool>(s->infer)) << op;
  }
}

}  // namespace
