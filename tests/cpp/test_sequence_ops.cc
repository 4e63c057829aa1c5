// ONNX sequence ops on the CPU backend (src/ops/sequence): each op through CpuPlan with hand-built graphs (negative
// positions, empty sequences, out-of-range positions naming the node, uneven splits), sequences inside If / Loop
// bodies (loop-carried sequence state, outer-scope sequences, If returning a sequence), the shape functions, and an
// ONNX model with sequence_type value infos built into a CPU engine and reloaded from its engine file.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"
#include "engine/engine_impl.h"
#include "graph_build_test_util.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"
#include "kilnrt/tensor.h"
#include "onnx_test_writer.h"
#include "sequence_test_model.h"
#include "ops/sequence/sequence_support.h"
#include "passes/shape_inference.h"

using namespace kilnrt;

namespace {

using graphtest::boolean;
using graphtest::f32;
using graphtest::i64;
using graphtest::i64s;
using graphtest::node;
using graphtest::tensor_type;
using graphtest::with_graph;
using graphtest::with_int;

std::vector<float> values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
ir::Graph graph(std::vector<std::string> inputs, std::vector<std::string> outputs) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = std::move(inputs);
  g.outputs = std::move(outputs);
  return g;
}

// Runs `g` and expects a kilnrt::Error of `code` whose message names `where` and contains `text`.
void expect_error(const ir::Graph& g, const std::map<std::string, Tensor>& in, ErrorCode code, const std::string& where,
                  const std::string& text) {
  try {
    backends::cpu::CpuPlan(g).run(in);
    FAIL() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// a, b, c -> SequenceConstruct -> At(pos), Length.
ir::Graph construct_at_graph() {
  ir::Graph g = graph({"a", "b", "c", "pos"}, {"at", "len"});
  g.nodes.push_back(node("make", "SequenceConstruct", {"a", "b", "c"}, {"seq"}));
  g.nodes.push_back(node("pick", "SequenceAt", {"seq", "pos"}, {"at"}));
  g.nodes.push_back(node("count", "SequenceLength", {"seq"}, {"len"}));
  return g;
}

TEST(SequenceOps, ConstructAtLengthWithNegativePositions) {
  const ir::Graph g = construct_at_graph();  // the plan refers to the graph: it must outlive the plan
  backends::cpu::CpuPlan plan(g);
  const Tensor a = f32({1, 2}, {2}), b = f32({3}, {1}), c = f32({4, 5, 6}, {3});
  std::map<std::string, Tensor> in{{"a", a}, {"b", b}, {"c", c}, {"pos", i64(1)}};
  auto out = plan.run(in);
  EXPECT_EQ(values(out.at("at")), (std::vector<float>{3}));
  EXPECT_EQ(out.at("len").dtype(), DType::kInt64);
  EXPECT_EQ(out.at("len").shape(), Shape{});
  EXPECT_EQ(out.at("len").data<int64_t>()[0], 3);
  in["pos"] = i64(-1);
  EXPECT_EQ(values(plan.run(in).at("at")), (std::vector<float>{4, 5, 6}));
  in["pos"] = i64(-3);
  EXPECT_EQ(values(plan.run(in).at("at")), (std::vector<float>{1, 2}));
  // The output is the caller's own: writing to it leaves the graph input alone.
  Tensor picked = plan.run(in).at("at");
  picked.data<float>()[0] = 100;
  EXPECT_EQ(a.data<float>()[0], 1);
}

TEST(SequenceOps, OutOfRangePositionsNameTheNode) {
  const ir::Graph g = construct_at_graph();
  std::map<std::string, Tensor> in{{"a", f32({1}, {1})}, {"b", f32({2}, {1})}, {"c", f32({3}, {1})}, {"pos", i64(3)}};
  expect_error(g, in, ErrorCode::kInvalidArgument, "pick", "position 3 is out of range for a sequence of length 3");
  in["pos"] = i64(-4);
  expect_error(g, in, ErrorCode::kInvalidArgument, "pick", "out of range");
  // Elements of different dtypes cannot form a sequence.
  in["pos"] = i64(0);
  in["b"] = i64(2);
  expect_error(g, in, ErrorCode::kInvalidArgument, "make", "cannot join a sequence of float32");
}

// SequenceEmpty, then inserts at the end / the front / before the last, erases, and concatenates.
TEST(SequenceOps, InsertEraseAndConcat) {
  ir::Graph g = graph({"a", "b", "c", "p0", "pm1"}, {"all", "erased_last", "erased_front", "n_empty"});
  g.nodes.push_back(node("empty", "SequenceEmpty", {}, {"s0"}));
  g.nodes.push_back(node("n0", "SequenceLength", {"s0"}, {"n_empty"}));
  g.nodes.push_back(node("ins_a", "SequenceInsert", {"s0", "a"}, {"s1"}));         // [a]
  g.nodes.push_back(node("ins_b", "SequenceInsert", {"s1", "b", "p0"}, {"s2"}));   // [b, a]
  g.nodes.push_back(node("ins_c", "SequenceInsert", {"s2", "c", "pm1"}, {"s3"}));  // [b, c, a]
  g.nodes.push_back(with_int(node("cat", "ConcatFromSequence", {"s3"}, {"all"}), "axis", 0));
  g.nodes.push_back(node("pop", "SequenceErase", {"s3"}, {"s4"}));  // [b, c]
  g.nodes.push_back(with_int(node("cat2", "ConcatFromSequence", {"s4"}, {"erased_last"}), "axis", -1));
  g.nodes.push_back(node("del0", "SequenceErase", {"s3", "p0"}, {"s5"}));  // [c, a]
  g.nodes.push_back(with_int(node("cat3", "ConcatFromSequence", {"s5"}, {"erased_front"}), "axis", 0));
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run(
      {{"a", f32({1, 2}, {2})}, {"b", f32({3}, {1})}, {"c", f32({4, 5, 6}, {3})}, {"p0", i64(0)}, {"pm1", i64(-1)}});
  EXPECT_EQ(out.at("n_empty").data<int64_t>()[0], 0);
  EXPECT_EQ(values(out.at("all")), (std::vector<float>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(values(out.at("erased_last")), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(values(out.at("erased_front")), (std::vector<float>{4, 5, 6, 1, 2}));
}

TEST(SequenceOps, EmptySequenceErrors) {
  ir::Graph at = graph({"p"}, {"y"});
  at.nodes.push_back(node("empty", "SequenceEmpty", {}, {"s"}));
  at.nodes.push_back(node("first", "SequenceAt", {"s", "p"}, {"y"}));
  expect_error(at, {{"p", i64(0)}}, ErrorCode::kInvalidArgument, "first", "length 0");
  ir::Graph erase = graph({}, {"n"});
  erase.nodes.push_back(node("empty", "SequenceEmpty", {}, {"s"}));
  erase.nodes.push_back(node("pop", "SequenceErase", {"s"}, {"s2"}));
  erase.nodes.push_back(node("len", "SequenceLength", {"s2"}, {"n"}));
  expect_error(erase, {}, ErrorCode::kInvalidArgument, "pop", "empty sequence");
  ir::Graph cat = graph({}, {"y"});
  cat.nodes.push_back(node("empty", "SequenceEmpty", {}, {"s"}));
  cat.nodes.push_back(with_int(node("cat", "ConcatFromSequence", {"s"}, {"y"}), "axis", 0));
  expect_error(cat, {}, ErrorCode::kInvalidArgument, "cat", "empty sequence");
  // Insert accepts positions -len .. len: on an empty sequence only 0.
  ir::Graph ins = graph({"x", "p"}, {"n"});
  ins.nodes.push_back(node("empty", "SequenceEmpty", {}, {"s"}));
  ins.nodes.push_back(node("put", "SequenceInsert", {"s", "x", "p"}, {"s2"}));
  ins.nodes.push_back(node("len", "SequenceLength", {"s2"}, {"n"}));
  EXPECT_EQ(backends::cpu::CpuPlan(ins).run({{"x", f32({1}, {1})}, {"p", i64(0)}}).at("n").data<int64_t>()[0], 1);
  expect_error(ins, {{"x", f32({1}, {1})}, {"p", i64(1)}}, ErrorCode::kInvalidArgument, "put", "valid: 0 to 0");
}

// x (5x2) -> SplitToSequence(split?, axis, keepdims) -> Length, At(last), Concat back along the axis.
ir::Graph split_graph(bool with_split, int64_t axis, int64_t keepdims) {
  ir::Graph g =
      graph(with_split ? std::vector<std::string>{"x", "split"} : std::vector<std::string>{"x"}, {"n", "last", "back"});
  ir::Node split = node("split", "SplitToSequence", {"x"}, {"s"});
  if (with_split) split.inputs.push_back("split");
  split = with_int(with_int(split, "axis", axis), "keepdims", keepdims);
  g.nodes.push_back(split);
  g.nodes.push_back(node("len", "SequenceLength", {"s"}, {"n"}));
  g.constants["m1"] = i64(-1);
  g.nodes.push_back(node("at", "SequenceAt", {"s", "m1"}, {"last"}));
  ir::Node cat = with_int(node("cat", "ConcatFromSequence", {"s"}, {"back"}), "axis", axis);
  if (!with_split && keepdims == 0) cat = with_int(cat, "new_axis", 1);
  g.nodes.push_back(cat);
  return g;
}

const Tensor kX = f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2});

TEST(SequenceOps, SplitToSequenceWithoutSplit) {
  auto keep = backends::cpu::CpuPlan(split_graph(false, 0, 1)).run({{"x", kX}});
  EXPECT_EQ(keep.at("n").data<int64_t>()[0], 5);
  EXPECT_EQ(keep.at("last").shape(), (Shape{1, 2}));
  EXPECT_EQ(values(keep.at("last")), (std::vector<float>{8, 9}));
  EXPECT_EQ(values(keep.at("back")), values(kX));
  // keepdims=0: the split axis is removed; ConcatFromSequence(new_axis=1) stacks the pieces back.
  auto squeeze = backends::cpu::CpuPlan(split_graph(false, -1, 0)).run({{"x", kX}});
  EXPECT_EQ(squeeze.at("n").data<int64_t>()[0], 2);
  EXPECT_EQ(squeeze.at("last").shape(), (Shape{5}));
  EXPECT_EQ(values(squeeze.at("last")), (std::vector<float>{1, 3, 5, 7, 9}));
  EXPECT_EQ(squeeze.at("back").shape(), (Shape{5, 2}));
  EXPECT_EQ(values(squeeze.at("back")), values(kX));
}

TEST(SequenceOps, SplitToSequenceScalarAndListSplits) {
  const ir::Graph g = split_graph(true, 0, 1);
  // Scalar 2 over 5 rows: 2, 2, then 1 (uneven); keepdims is ignored when split is given.
  auto uneven = backends::cpu::CpuPlan(g).run({{"x", kX}, {"split", i64(2)}});
  EXPECT_EQ(uneven.at("n").data<int64_t>()[0], 3);
  EXPECT_EQ(uneven.at("last").shape(), (Shape{1, 2}));
  EXPECT_EQ(values(uneven.at("last")), (std::vector<float>{8, 9}));
  EXPECT_EQ(values(uneven.at("back")), values(kX));
  auto list = backends::cpu::CpuPlan(g).run({{"x", kX}, {"split", i64s({1, 0, 4})}});
  EXPECT_EQ(list.at("n").data<int64_t>()[0], 3);
  EXPECT_EQ(list.at("last").shape(), (Shape{4, 2}));
  EXPECT_EQ(values(list.at("last")), (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(values(list.at("back")), values(kX));
  expect_error(g, {{"x", kX}, {"split", i64s({2, 2})}}, ErrorCode::kInvalidArgument, "split", "add up to 4");
  expect_error(g, {{"x", kX}, {"split", i64(0)}}, ErrorCode::kInvalidArgument, "split", "must be positive");
  // Along axis 1 with sizes {1, 1}: columns.
  auto cols = backends::cpu::CpuPlan(split_graph(true, 1, 1)).run({{"x", kX}, {"split", i64s({1, 1})}});
  EXPECT_EQ(values(cols.at("last")), (std::vector<float>{1, 3, 5, 7, 9}));
  EXPECT_EQ(values(cols.at("back")), values(kX));
}

TEST(SequenceOps, ConcatFromSequenceNewAxisAndMismatch) {
  ir::Graph g = graph({"a", "b"}, {"y"});
  g.nodes.push_back(node("make", "SequenceConstruct", {"a", "b"}, {"s"}));
  g.nodes.push_back(with_int(with_int(node("stack", "ConcatFromSequence", {"s"}, {"y"}), "axis", -1), "new_axis", 1));
  auto out = backends::cpu::CpuPlan(g).run({{"a", f32({1, 2, 3}, {3})}, {"b", f32({4, 5, 6}, {3})}});
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out.at("y")), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  expect_error(g, {{"a", f32({1, 2, 3}, {3})}, {"b", f32({4, 5}, {2})}}, ErrorCode::kInvalidArgument, "stack",
               "differ outside axis");
}

TEST(SequenceOps, ShapeFunctions) {
  ir::Graph g = graph({"x"}, {"back", "last", "n"});
  g.types["x"] = tensor_type(DType::kFloat32, {ir::Dim::symbol("batch"), 4});
  g.nodes.push_back(with_int(node("split", "SplitToSequence", {"x"}, {"s"}), "axis", 1));
  g.nodes.push_back(node("len", "SequenceLength", {"s"}, {"n"}));
  g.constants["zero"] = i64(0);
  g.nodes.push_back(node("at", "SequenceAt", {"s", "zero"}, {"last"}));
  g.nodes.push_back(with_int(node("cat", "ConcatFromSequence", {"s"}, {"back"}), "axis", 1));
  g.nodes.push_back(with_int(node("empty", "SequenceEmpty", {}, {"e"}), "dtype", static_cast<int64_t>(DType::kInt32)));
  passes::infer_shapes(g);
  const ir::TensorType* s = g.type_of("s");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->is_sequence);
  EXPECT_EQ(s->shape, (ir::SymShape{ir::Dim::symbol("batch"), 1}));
  EXPECT_FALSE(g.type_of("last")->is_sequence);
  EXPECT_EQ(g.type_of("last")->shape, (ir::SymShape{ir::Dim::symbol("batch"), 1}));
  EXPECT_EQ(g.type_of("n")->dtype, DType::kInt64);
  EXPECT_EQ(g.type_of("n")->shape, ir::SymShape{});
  EXPECT_FALSE(g.type_of("back")->is_sequence);
  ASSERT_EQ(g.type_of("back")->shape.size(), 2u);
  EXPECT_FALSE(g.type_of("back")->shape[1].known());
  EXPECT_TRUE(g.type_of("e")->is_sequence);
  EXPECT_EQ(g.type_of("e")->dtype, DType::kInt32);
  EXPECT_FALSE(g.type_of("e")->has_shape);
  // The listing (inspect, debugging) says which values are sequences.
  const std::string listing = g.to_string();
  EXPECT_NE(listing.find("-> s:float32[batchx1] sequence"), std::string::npos) << listing;
  EXPECT_NE(listing.find("-> last:float32[batchx1]\n"), std::string::npos) << listing;
}

// Loop with a sequence state: seq starts empty (SequenceEmpty outside), each iteration appends x * i where x is an
// outer-scope tensor, and reads element i of an outer-scope sequence; after the loop, the state is concatenated.
ir::Graph loop_with_sequence_state() {
  ir::Graph g = graph({"M", "x"}, {"stacked", "picked"});
  g.nodes.push_back(node("empty", "SequenceEmpty", {}, {"seq0"}));
  g.nodes.push_back(node("outer_seq", "SplitToSequence", {"x"}, {"rows"}));  // x: [M, 2] -> M rows of [1, 2]
  ir::Graph body;
  body.name = "loop_body";
  body.opsets[""] = 17;
  body.inputs = {"i", "c_in", "seq_in"};
  body.types["i"] = tensor_type(DType::kInt64, {});
  body.types["c_in"] = tensor_type(DType::kBool, {});
  body.types["seq_in"] = tensor_type(DType::kFloat32, {2}, /*sequence=*/true);
  body.nodes.push_back(with_int(node("to_float", "Cast", {"i"}, {"fi"}), "to", static_cast<int64_t>(DType::kFloat32)));
  body.nodes.push_back(node("row", "SequenceAt", {"rows", "i"}, {"r"}));  // reads the outer-scope sequence
  body.nodes.push_back(node("scale", "Mul", {"r", "fi"}, {"ri"}));
  body.nodes.push_back(node("append", "SequenceInsert", {"seq_in", "ri"}, {"seq_out"}));
  body.nodes.push_back(node("keep", "Identity", {"c_in"}, {"c_out"}));
  body.nodes.push_back(node("emit", "Identity", {"r"}, {"scan"}));
  body.outputs = {"c_out", "seq_out", "scan"};
  body.types["seq_out"] = tensor_type(DType::kFloat32, {1, 2}, /*sequence=*/true);
  g.nodes.push_back(with_graph(node("the_loop", "Loop", {"M", "", "seq0"}, {"seq_final", "picked"}), "body", body));
  g.nodes.push_back(with_int(node("cat", "ConcatFromSequence", {"seq_final"}, {"stacked"}), "axis", 0));
  return g;
}

TEST(SequenceOps, LoopCarriesSequenceState) {
  const ir::Graph g = loop_with_sequence_state();
  backends::cpu::CpuPlan plan(g);
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  auto out = plan.run({{"M", i64(3)}, {"x", x}});
  EXPECT_EQ(out.at("stacked").shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out.at("stacked")), (std::vector<float>{0, 0, 3, 4, 10, 12}));
  EXPECT_EQ(out.at("picked").shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values(out.at("picked")), values(x));
  // Zero trips: the empty initial sequence comes out, and concatenating it is an error naming the node.
  expect_error(g, {{"M", i64(0)}, {"x", x}}, ErrorCode::kInvalidArgument, "cat", "empty sequence");
  // A trip count beyond the outer sequence: the body's SequenceAt names itself.
  expect_error(g, {{"M", i64(4)}, {"x", x}}, ErrorCode::kInvalidArgument, "row", "position 3 is out of range");
  ir::Graph typed = loop_with_sequence_state();
  typed.types["M"] = tensor_type(DType::kInt64, {});
  typed.types["x"] = tensor_type(DType::kFloat32, {3, 2});
  passes::infer_shapes(typed);
  EXPECT_TRUE(typed.type_of("seq_final")->is_sequence);
  EXPECT_FALSE(typed.type_of("picked")->is_sequence);
}

// If returning a sequence: then -> SequenceConstruct(x, x), else -> SplitToSequence(x); the length tells which.
TEST(SequenceOps, IfReturnsASequence) {
  ir::Graph g = graph({"c", "x"}, {"n", "first"});
  ir::Graph then_g;
  then_g.name = "then";
  then_g.opsets[""] = 17;
  then_g.nodes.push_back(node("pair", "SequenceConstruct", {"x", "x"}, {"ts"}));
  then_g.outputs = {"ts"};
  then_g.types["ts"] = tensor_type(DType::kFloat32, {3}, true);
  ir::Graph else_g;
  else_g.name = "else";
  else_g.opsets[""] = 17;
  else_g.nodes.push_back(with_int(node("pieces", "SplitToSequence", {"x"}, {"es"}), "keepdims", 0));
  else_g.outputs = {"es"};
  else_g.types["es"] = tensor_type(DType::kFloat32, {}, true);
  g.nodes.push_back(
      with_graph(with_graph(node("choose", "If", {"c"}, {"s"}), "then_branch", then_g), "else_branch", else_g));
  g.nodes.push_back(node("len", "SequenceLength", {"s"}, {"n"}));
  g.nodes.push_back(node("ident", "Identity", {"s"}, {"s_copy"}));  // Identity passes a sequence through
  g.constants["zero"] = i64(0);
  g.nodes.push_back(node("at", "SequenceAt", {"s_copy", "zero"}, {"first"}));
  backends::cpu::CpuPlan plan(g);
  const Tensor x = f32({7, 8, 9}, {3});
  auto yes = plan.run({{"c", boolean(true)}, {"x", x}});
  EXPECT_EQ(yes.at("n").data<int64_t>()[0], 2);
  EXPECT_EQ(values(yes.at("first")), (std::vector<float>{7, 8, 9}));
  auto no = plan.run({{"c", boolean(false)}, {"x", x}});
  EXPECT_EQ(no.at("n").data<int64_t>()[0], 3);
  EXPECT_EQ(no.at("first").shape(), Shape{});
  EXPECT_EQ(values(no.at("first")), (std::vector<float>{7}));
  g.types["c"] = tensor_type(DType::kBool, {});
  g.types["x"] = tensor_type(DType::kFloat32, {3});
  passes::infer_shapes(g);
  EXPECT_TRUE(g.type_of("s")->is_sequence);
  EXPECT_TRUE(g.type_of("s_copy")->is_sequence);
}

// SequenceMap: out[i] = a[i] + b[i] + t (two sequences and a tensor), and a second output of Shape(a[i]).
TEST(SequenceOps, SequenceMapRunsTheBodyPerElement) {
  ir::Graph g = graph({"a0", "a1", "b0", "b1", "t"}, {"sum", "n_shapes", "shape1"});
  g.nodes.push_back(node("make_a", "SequenceConstruct", {"a0", "a1"}, {"a"}));
  g.nodes.push_back(node("make_b", "SequenceConstruct", {"b0", "b1"}, {"b"}));
  ir::Graph body;
  body.name = "map_body";
  body.opsets[""] = 17;
  body.inputs = {"x", "y", "z"};
  body.nodes.push_back(node("add1", "Add", {"x", "y"}, {"xy"}));
  body.nodes.push_back(node("add2", "Add", {"xy", "z"}, {"out"}));
  body.nodes.push_back(node("shape", "Shape", {"x"}, {"shp"}));
  body.outputs = {"out", "shp"};
  body.types["out"] = tensor_type(DType::kFloat32, {ir::Dim()});
  g.nodes.push_back(with_graph(node("map", "SequenceMap", {"a", "b", "t"}, {"sums", "shapes"}), "body", body));
  g.nodes.push_back(with_int(node("cat", "ConcatFromSequence", {"sums"}, {"sum"}), "axis", 0));
  g.nodes.push_back(node("len", "SequenceLength", {"shapes"}, {"n_shapes"}));
  g.constants["one"] = i64(1);
  g.nodes.push_back(node("at", "SequenceAt", {"shapes", "one"}, {"shape1"}));
  backends::cpu::CpuPlan plan(g);
  auto out = plan.run({{"a0", f32({1, 2}, {2})},
                       {"a1", f32({3, 4, 5}, {3})},
                       {"b0", f32({10, 20}, {2})},
                       {"b1", f32({30, 40, 50}, {3})},
                       {"t", f32({100}, {1})}});
  EXPECT_EQ(values(out.at("sum")), (std::vector<float>{111, 122, 133, 144, 155}));
  EXPECT_EQ(out.at("n_shapes").data<int64_t>()[0], 2);
  EXPECT_EQ(out.at("shape1").data<int64_t>()[0], 3);
  // Sequences of different lengths: an error naming the node.
  ir::Graph bad = g;
  bad.nodes[1].inputs = {"b0"};
  expect_error(bad,
               {{"a0", f32({1}, {1})},
                {"a1", f32({1}, {1})},
                {"b0", f32({1}, {1})},
                {"b1", f32({1}, {1})},
                {"t", f32({1}, {1})}},
               ErrorCode::kInvalidArgument, "map", "sequence input 1 has 1 elements, input_sequence has 2");
}

// A sequence where a tensor is expected (and the reverse) is an error naming the node, never "input missing".
TEST(SequenceOps, SequenceWhereATensorIsExpected) {
  ir::Graph relu = graph({"x"}, {"y"});
  relu.nodes.push_back(node("make", "SequenceConstruct", {"x"}, {"s"}));
  relu.nodes.push_back(node("act", "Relu", {"s"}, {"y"}));
  expect_error(relu, {{"x", f32({1}, {1})}}, ErrorCode::kInvalidArgument, "act", "is a sequence; Relu takes tensors");
  ir::Graph nested = graph({"x"}, {"n"});
  nested.nodes.push_back(node("make", "SequenceConstruct", {"x"}, {"s"}));
  nested.nodes.push_back(node("nest", "SequenceConstruct", {"s"}, {"s2"}));
  nested.nodes.push_back(node("len", "SequenceLength", {"s2"}, {"n"}));
  expect_error(nested, {{"x", f32({1}, {1})}}, ErrorCode::kInvalidArgument, "nest", "must be a tensor, not a sequence");
  ir::Graph at = graph({"x", "p"}, {"y"});
  at.nodes.push_back(node("pick", "SequenceAt", {"x", "p"}, {"y"}));
  expect_error(at, {{"x", f32({1}, {1})}, {"p", i64(0)}}, ErrorCode::kInvalidArgument, "pick", "must be a sequence");
  // Split sizes that overflow int64 when added: an error, not undefined behaviour.
  ir::Graph split = split_graph(true, 1, 1);
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  expect_error(split, {{"x", Tensor::empty(DType::kFloat32, {0, big})}, {"split", i64s({big, big, big})}},
               ErrorCode::kInvalidArgument, "split", "add up to more than");
}

TEST(SequenceOps, SequenceGraphOutputIsAClearError) {
  ir::Graph g = graph({"x"}, {"s"});
  g.nodes.push_back(node("make", "SequenceConstruct", {"x"}, {"s"}));
  expect_error(g, {{"x", f32({1}, {1})}}, ErrorCode::kUnsupported, "s", "is a sequence: not supported as engine I/O");
}

// Backends without sequence support (CUDA) refuse them at build time, naming the node (bodies searched too).
TEST(SequenceOps, CheckNoSequencesNamesTheNode) {
  ir::Graph plain = graph({"x"}, {"y"});
  plain.nodes.push_back(node("relu", "Relu", {"x"}, {"y"}));
  EXPECT_NO_THROW(ops::check_no_sequences(plain, "CUDA"));
  try {
    ops::check_no_sequences(loop_with_sequence_state(), "CUDA");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("SequenceEmpty 'empty'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not supported on CUDA yet"), std::string::npos) << e.what();
  }
  // Only the Loop's body uses sequences: the Loop and the body node are named.
  ir::Graph g = loop_with_sequence_state();
  g.nodes.erase(g.nodes.begin(), g.nodes.begin() + 2);
  g.nodes.pop_back();
  try {
    ops::check_no_sequences(g, "CUDA");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Loop 'the_loop', body node SequenceAt 'row'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ops::is_sequence_op("SplitToSequence"));
  EXPECT_FALSE(ops::is_sequence_op("ReverseSequence"));
}

// ---- ONNX import + engine file ------------------------------------------------------------------------------------

using namespace kilnrt::onnx_test;
using kilnrt::seqtest::list_model;
using kilnrt::seqtest::sequence_value_info;

TEST(SequenceOps, ImportsSequenceTypes) {
  const std::string bytes = list_model().serialize();
  ir::Graph g = ir::import_onnx_bytes(bytes.data(), bytes.size(), "", "list_model");
  ASSERT_NE(g.type_of("rows"), nullptr);
  EXPECT_TRUE(g.type_of("rows")->is_sequence);
  EXPECT_EQ(g.type_of("rows")->dtype, DType::kFloat32);
  EXPECT_EQ(g.type_of("rows")->shape.size(), 1u);
  const ir::Node* loop = nullptr;
  for (const ir::Node& n : g.nodes)
    if (n.op_type == "Loop") loop = &n;
  ASSERT_NE(loop, nullptr);
  const ir::Graph& body = *loop->attrs.at("body").g;
  EXPECT_TRUE(body.type_of("acc_in")->is_sequence);
  EXPECT_FALSE(body.type_of("i")->is_sequence);
  // A sequence as a graph input is refused by name.
  ModelSpec io = list_model();
  io.graph.extra += sequence_value_info(11, "extra_seq", kFloat);
  const std::string io_bytes = io.serialize();
  try {
    ir::import_onnx_bytes(io_bytes.data(), io_bytes.size(), "", "io_model");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("graph input 'extra_seq' is a sequence: not supported as engine I/O"),
              std::string::npos)
        << e.what();
  }
}

TEST(SequenceOps, EngineWithSequencesBuildsRunsAndReloads) {
  const std::string path = ::testing::TempDir() + "/kilnrt_sequence_list_model.onnx";
  std::ofstream(path, std::ios::binary) << list_model().serialize();
  BuildOptions opt;
  opt.device = "cpu";
  const std::vector<uint8_t> engine_bytes = build_engine(path, opt);
  std::vector<float> xv(15);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) * 0.5f - 3.f;
  const Tensor x = f32(xv, {5, 3});
  std::vector<float> expected;
  for (float v : xv) expected.push_back(2.f * v);
  for (int round = 0; round < 2; ++round) {  // the engine file written by the builder, loaded twice
    auto engine = Engine::from_bytes(engine_bytes.data(), engine_bytes.size(), "list_model.engine");
    // The sequence types came back from the engine file (flag bit 1 of each type), the tensor types did not change.
    const ir::Graph& g = engine->impl().graph;
    ASSERT_NE(g.type_of("rows"), nullptr);
    EXPECT_TRUE(g.type_of("rows")->is_sequence);
    EXPECT_EQ(g.type_of("rows")->dtype, DType::kFloat32);
    EXPECT_FALSE(g.type_of("x")->is_sequence);
    auto out = engine->run({{"x", x}});
    EXPECT_EQ(out.at("y").shape(), (Shape{5, 3}));
    EXPECT_EQ(values(out.at("y")), expected);
  }
}

// --mark-all-outputs marks the intermediate tensors of a model with sequences, never a sequence (engine I/O are
// tensors): the engine runs and gives the same output.
TEST(SequenceOps, MarkAllOutputsSkipsSequences) {
  const std::string path = ::testing::TempDir() + "/kilnrt_sequence_mark_all.onnx";
  std::ofstream(path, std::ios::binary) << list_model().serialize();
  BuildOptions opt;
  opt.device = "cpu";
  opt.mark_all_outputs = true;
  const std::vector<uint8_t> bytes = build_engine(path, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "mark_all.engine");
  std::vector<std::string> names;
  for (const TensorInfo& o : engine->outputs()) names.push_back(o.name);
  EXPECT_EQ(names.front(), "y");
  for (const std::string& n : names) EXPECT_FALSE(engine->impl().graph.type_of(n)->is_sequence) << n;
  const Tensor x = f32(std::vector<float>(15, 1.5f), {5, 3});
  auto out = engine->run({{"x", x}});
  EXPECT_EQ(values(out.at("y")), std::vector<float>(15, 3.f));
}

}  // namespace
