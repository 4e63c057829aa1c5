// Sequence values in CUDA engines (src/backends/cuda/control_flow/sequence_steps.h): host tests of the plan (sequence
// ops and Identity of a sequence are accepted, never host shape computations, make the plan segmented; float32 engines
// only) and of the build-time check (ops::check_cuda_sequences: sequences through other ops and in Scan bodies are
// refused naming the node); GPU tests run each op on the CUDA backend and compare with the CPU engine (negative
// positions, empty sequences, uneven splits, concat with new_axis, errors naming the node), and If / Loop / SequenceMap
// passing sequences. The GPU tests skip with a message without a usable GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend_test_util.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#include "ops/sequence/sequence_support.h"
#include "passes/shape_inference.h"
#include "graph_build_test_util.h"
#include "sequence_test_model.h"

using namespace kilnrt;

namespace {

using backends::cuda::CudaPlan;

using graphtest::boolean;
using graphtest::f32;
using graphtest::i64;
using graphtest::i64s;
using graphtest::node;
using graphtest::with_graph;
using graphtest::with_int;

// A graph of `nodes` whose inputs take the dtypes / shapes of `feeds` (constants: `consts`); types inferred.
ir::Graph make_graph(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& outputs,
                     std::vector<ir::Node> nodes, const std::map<std::string, Tensor>& consts = {}) {
  ir::Graph g;
  g.name = "seq";
  g.opsets[""] = 17;
  for (const auto& [name, t] : feeds) {
    g.inputs.push_back(name);
    ir::TensorType tt;
    tt.dtype = t.dtype();
    tt.has_shape = true;
    tt.shape = ir::shape_to_sym(t.shape());
    g.types[name] = tt;
  }
  for (const auto& [name, t] : consts) g.constants[name] = t;
  g.outputs = outputs;
  g.nodes = std::move(nodes);
  passes::infer_shapes(g);
  return g;
}

std::string tactic_of(const CudaPlan& plan, const std::string& node) {
  for (const auto& [name, tactic] : plan.tactics())
    if (name == node) return tactic;
  return "";
}

void expect_refused(const ir::Graph& g, const std::string& where) {
  try {
    ops::check_cuda_sequences(g);
    FAIL() << "expected the CUDA sequence check to refuse " << where;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not supported on CUDA yet"), std::string::npos) << e.what();
  }
}

// ---- graphs shared by the host and GPU tests ---------------------------------------------------------------------

// a, b, c -> SequenceConstruct -> At(pos), Length; pos a graph input (a device value: a sync point).
ir::Graph construct_at_graph(const std::map<std::string, Tensor>& feeds) {
  return make_graph(
      feeds, {"at", "len"},
      {node("make", "SequenceConstruct", {"a", "b", "c"}, {"seq"}), node("pick", "SequenceAt", {"seq", "pos"}, {"at"}),
       node("count", "SequenceLength", {"seq"}, {"len"})});
}

// SequenceEmpty, inserts at the end / front / before the last, erases, concatenations, and a device layer (Mul)
// reading a SequenceAt view and the length.
ir::Graph insert_erase_graph(const std::map<std::string, Tensor>& feeds) {
  return make_graph(
      feeds, {"all", "erased_last", "erased_front", "n_empty", "scaled", "n_plus"},
      {node("empty", "SequenceEmpty", {}, {"s0"}), node("n0", "SequenceLength", {"s0"}, {"n_empty"}),
       node("ins_a", "SequenceInsert", {"s0", "a"}, {"s1"}), node("ins_b", "SequenceInsert", {"s1", "b", "p0"}, {"s2"}),
       node("ins_c", "SequenceInsert", {"s2", "c", "pm1"}, {"s3"}),
       with_int(node("cat", "ConcatFromSequence", {"s3"}, {"all"}), "axis", 0),
       node("pop", "SequenceErase", {"s3"}, {"s4"}),
       with_int(node("cat2", "ConcatFromSequence", {"s4"}, {"erased_last"}), "axis", -1),
       node("del0", "SequenceErase", {"s3", "p0"}, {"s5"}),
       with_int(node("cat3", "ConcatFromSequence", {"s5"}, {"erased_front"}), "axis", 0),
       node("first", "SequenceAt", {"s5", "p0"}, {"c_again"}), node("mul", "Mul", {"c_again", "c"}, {"scaled"}),
       node("n3", "SequenceLength", {"s3"}, {"n3v"}), node("add", "Add", {"n3v", "p0"}, {"n_plus"})});
}

// x -> SplitToSequence(split?, axis, keepdims) -> Length, At(-1) (a constant position), Concat back.
ir::Graph split_graph(const std::map<std::string, Tensor>& feeds, int64_t axis, int64_t keepdims) {
  const bool with_split = feeds.count("split") != 0;
  ir::Node split = node("split", "SplitToSequence", {"x"}, {"s"});
  if (with_split) split.inputs.push_back("split");
  split = with_int(with_int(split, "axis", axis), "keepdims", keepdims);
  ir::Node cat = with_int(node("cat", "ConcatFromSequence", {"s"}, {"back"}), "axis", axis);
  if (!with_split && keepdims == 0) cat = with_int(cat, "new_axis", 1);
  return make_graph(
      feeds, {"n", "last", "back"},
      {split, node("len", "SequenceLength", {"s"}, {"n"}), node("at", "SequenceAt", {"s", "m1"}, {"last"}), cat},
      {{"m1", i64(-1)}});
}

ir::TensorType seq_type(DType dt, ir::SymShape s) {
  ir::TensorType t;
  t.is_sequence = true;
  t.dtype = dt;
  t.has_shape = true;
  t.shape = std::move(s);
  return t;
}

// If returning a sequence: then = [x, x], else = SplitToSequence(x, keepdims 0) (outer-scope reads of x); then
// Length, Identity and At(0) of the result.
ir::Graph if_graph(const std::map<std::string, Tensor>& feeds) {
  ir::Graph then_g;
  then_g.name = "then";
  then_g.opsets[""] = 17;
  then_g.nodes.push_back(node("pair", "SequenceConstruct", {"x", "x"}, {"ts"}));
  then_g.outputs = {"ts"};
  then_g.types["ts"] = seq_type(DType::kFloat32, {3});
  ir::Graph else_g;
  else_g.name = "else";
  else_g.opsets[""] = 17;
  else_g.nodes.push_back(with_int(node("pieces", "SplitToSequence", {"x"}, {"es"}), "keepdims", 0));
  else_g.outputs = {"es"};
  else_g.types["es"] = seq_type(DType::kFloat32, {});
  return make_graph(
      feeds, {"n", "first"},
      {with_graph(with_graph(node("choose", "If", {"c"}, {"s"}), "then_branch", then_g), "else_branch", else_g),
       node("len", "SequenceLength", {"s"}, {"n"}), node("ident", "Identity", {"s"}, {"s_copy"}),
       node("at", "SequenceAt", {"s_copy", "zero"}, {"first"})},
      {{"zero", i64(0)}});
}

// ---- host tests --------------------------------------------------------------------------------------------------

TEST(CudaSequencesHost, PlanAcceptsSequenceOpsAsSegmentedSteps) {
  const std::map<std::string, Tensor> feeds{
      {"a", f32({1, 2}, {2})}, {"b", f32({3}, {1})}, {"c", f32({4, 5, 6}, {3})}, {"p0", i64(0)}, {"pm1", i64(-1)}};
  const ir::Graph g = insert_erase_graph(feeds);
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  EXPECT_NO_THROW(ops::check_cuda_sequences(g));
  CudaPlan plan(g, 0);                // no constant is read on the device: nothing to upload
  EXPECT_GE(plan.sync_points(), 12);  // one per sequence step
  EXPECT_EQ(tactic_of(plan, "empty"), "cuda:host:sequence-list");  // no inputs, yet not a host shape computation
  EXPECT_EQ(tactic_of(plan, "cat"), "cuda:host:sequence-list");
  EXPECT_EQ(tactic_of(plan, "mul").find("sequence"), std::string::npos) << tactic_of(plan, "mul");  // a GPU layer
  EXPECT_EQ(tactic_of(plan, "mul").rfind("cuda:", 0), 0u) << tactic_of(plan, "mul");
  backends::cuda::CudaRunner runner(plan);
  EXPECT_TRUE(runner.data_dependent());
}

TEST(CudaSequencesHost, SequenceOpsOfConstantsAreNotHostSteps) {
  // SequenceConstruct of constants only: a host step would need a host sequence, so it stays a sequence step.
  const ir::Graph g = make_graph({{"x", f32({1, 2}, {2})}}, {"y"},
                                 {node("make", "SequenceConstruct", {"k1", "k2"}, {"s"}),
                                  with_int(node("cat", "ConcatFromSequence", {"s"}, {"y"}), "axis", 0)},
                                 {{"k1", f32({1}, {1})}, {"k2", f32({2, 3}, {2})}});
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  EXPECT_NO_THROW(ops::check_cuda_sequences(g));
}

// a, b -> SequenceConstruct -> Identity -> ConcatFromSequence (test_identity_sequence's shape).
ir::Graph identity_graph(const std::map<std::string, Tensor>& feeds) {
  return make_graph(feeds, {"y"},
                    {node("make", "SequenceConstruct", {"a", "b"}, {"s"}), node("copy", "Identity", {"s"}, {"s2"}),
                     with_int(node("cat", "ConcatFromSequence", {"s2"}, {"y"}), "axis", 0)});
}

TEST(CudaSequencesHost, IdentityOfASequenceIsASequenceStep) {
  const ir::Graph g = identity_graph({{"a", f32({1}, {1})}, {"b", f32({2}, {1})}});
  ASSERT_NE(g.type_of("s2"), nullptr);
  ASSERT_TRUE(g.type_of("s2")->is_sequence);
  EXPECT_NO_THROW(ops::check_cuda_sequences(g));
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);
  EXPECT_EQ(tactic_of(plan, "copy"), "cuda:host:sequence-list");
  EXPECT_EQ(plan.sync_points(), 3);
}

TEST(CudaSequencesHost, BuildCheckRefusesSequencesThroughOtherOps) {
  // Another op taking a sequence.
  ir::Graph concat = make_graph(
      {{"a", f32({1}, {1})}}, {"y"},
      {node("make", "SequenceConstruct", {"a"}, {"s"}), with_int(node("join", "Concat", {"s"}, {"y"}), "axis", 0)});
  ASSERT_TRUE(concat.type_of("s")->is_sequence);
  expect_refused(concat, "join");
}

TEST(CudaSequencesHost, IfAndLoopPassingSequencesArePlaced) {
  // The torch-like list model: a Loop carrying a sequence state and reading an outer sequence.
  const std::string path = ::testing::TempDir() + "/kilnrt_cuda_sequence_list_model.onnx";
  std::ofstream(path, std::ios::binary) << seqtest::list_model().serialize();
  const ir::Graph list = ir::import_onnx_file(path);
  EXPECT_NO_THROW(ops::check_cuda_sequences(list));
  EXPECT_NO_THROW(CudaPlan::check_supported(list));
  const ir::Graph g = if_graph({{"c", boolean(true)}, {"x", f32({7, 8, 9}, {3})}});
  ASSERT_TRUE(g.type_of("s")->is_sequence);
  EXPECT_NO_THROW(ops::check_cuda_sequences(g));
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);  // the branches read no constant on the device
  EXPECT_EQ(tactic_of(plan, "choose"), "cuda:control-flow:if");
}

// SequenceMap: sums[i] = a[i] + b[i] + t, shapes[i] = Shape(a[i]); then Concat, Length, At(1).
ir::Graph map_graph(const std::map<std::string, Tensor>& feeds) {
  ir::Graph body;
  body.name = "map_body";
  body.opsets[""] = 17;
  body.inputs = {"x", "y", "z"};
  body.nodes.push_back(node("add1", "Add", {"x", "y"}, {"xy"}));
  body.nodes.push_back(node("add2", "Add", {"xy", "z"}, {"out"}));
  body.nodes.push_back(node("shape", "Shape", {"x"}, {"shp"}));
  body.outputs = {"out", "shp"};
  return make_graph(feeds, {"sum", "n_shapes", "shape1"},
                    {node("make_a", "SequenceConstruct", {"a0", "a1"}, {"a"}),
                     node("make_b", "SequenceConstruct", {"b0", "b1"}, {"b"}),
                     with_graph(node("map", "SequenceMap", {"a", "b", "t"}, {"sums", "shapes"}), "body", body),
                     with_int(node("cat", "ConcatFromSequence", {"sums"}, {"sum"}), "axis", 0),
                     node("len", "SequenceLength", {"shapes"}, {"n_shapes"}),
                     node("at", "SequenceAt", {"shapes", "one"}, {"shape1"})},
                    {{"one", i64(1)}});
}

const std::map<std::string, Tensor> kMapFeeds{{"a0", f32({1, 2}, {2})},
                                              {"a1", f32({3, 4, 5}, {3})},
                                              {"b0", f32({10, 20}, {2})},
                                              {"b1", f32({30, 40, 50}, {3})},
                                              {"t", f32({100}, {1})}};

// The body declares neither inputs nor outputs: the element dtypes of SequenceMap's outputs come from inferring the
// body with the input sequences' element dtypes (passes/control_flow_types), so "sum" is float32 (the H100 run of
// 12:37 failed creating an output of undefined dtype).
TEST(CudaSequencesHost, SequenceMapOutputsAreTypedFromTheBody) {
  const ir::Graph g = map_graph(kMapFeeds);
  ASSERT_NE(g.type_of("sums"), nullptr);
  EXPECT_TRUE(g.type_of("sums")->is_sequence);
  EXPECT_EQ(g.type_of("sums")->dtype, DType::kFloat32);
  EXPECT_EQ(g.type_of("shapes")->dtype, DType::kInt64);
  EXPECT_EQ(g.type_of("sum")->dtype, DType::kFloat32);
  EXPECT_EQ(g.type_of("shape1")->dtype, DType::kInt64);
}

TEST(CudaSequencesHost, SequenceMapIsPlaced) {
  const ir::Graph g = map_graph(kMapFeeds);
  EXPECT_NO_THROW(ops::check_cuda_sequences(g));
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);
  EXPECT_EQ(tactic_of(plan, "map"), "cuda:control-flow:sequence-map");
}

TEST(CudaSequencesHost, SixteenBitEnginesRefuseSequences) {
  const std::map<std::string, Tensor> feeds{{"a", f32({1, 2}, {2})}};
  ir::Node relu = node("relu", "Relu", {"y0"}, {"y"});
  ir::Attribute p;
  p.kind = ir::Attribute::Kind::kString;
  p.s = "fp16";
  relu.attrs[backends::cuda::kPrecisionAttr] = p;
  const ir::Graph g = make_graph(feeds, {"y"},
                                 {node("make", "SequenceConstruct", {"a", "a"}, {"s"}),
                                  with_int(node("cat", "ConcatFromSequence", {"s"}, {"y0"}), "axis", 0), relu});
  try {
    CudaPlan plan(g, 0);
    FAIL() << "expected a 16-bit engine with sequences to be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("float32 CUDA engines only"), std::string::npos) << e.what();
  }
}

// ---- GPU tests: CUDA engine vs the CPU engine --------------------------------------------------------------------

void compare(const ir::Graph& g, const std::map<std::string, Tensor>& feeds) {
  const auto want = cudatest::run_cpu(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  ASSERT_FALSE(want.empty());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE("output " + name);
    ASSERT_TRUE(got.count(name));
    cudatest::expect_tensors_close(got.at(name), t, 0, 0);
  }
}

void expect_cuda_error(const ir::Graph& g, const std::map<std::string, Tensor>& feeds, const std::string& where,
                       const std::string& text) {
  try {
    cudatest::run_cuda(g, feeds);
    FAIL() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(CudaSequences, ConstructAtLengthWithNegativePositions) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::map<std::string, Tensor> feeds{
      {"a", f32({1, 2}, {2})}, {"b", f32({3}, {1})}, {"c", f32({4, 5, 6}, {3})}, {"pos", i64(1)}};
  const ir::Graph g = construct_at_graph(feeds);
  for (int64_t pos : {1, -1, -3, 0, 2}) {
    SCOPED_TRACE("position " + std::to_string(pos));
    feeds["pos"] = i64(pos);
    compare(g, feeds);
  }
  const auto got = cudatest::run_cuda(g, feeds);  // pos 2: the third element
  EXPECT_EQ(got.at("at").shape(), (Shape{3}));
  EXPECT_EQ(got.at("at").data<float>()[2], 6.f);
  EXPECT_EQ(got.at("len").data<int64_t>()[0], 3);
}

TEST(CudaSequences, OutOfRangePositionsAndDtypesNameTheNode) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::map<std::string, Tensor> feeds{
      {"a", f32({1}, {1})}, {"b", f32({2}, {1})}, {"c", f32({3}, {1})}, {"pos", i64(3)}};
  const ir::Graph g = construct_at_graph(feeds);
  expect_cuda_error(g, feeds, "pick", "position 3 is out of range for a sequence of length 3");
  feeds["pos"] = i64(-4);
  expect_cuda_error(g, feeds, "pick", "out of range");
  feeds["pos"] = i64(0);
  feeds["b"] = Tensor::from_vector(std::vector<int32_t>{2}, DType::kInt32, {1});
  const ir::Graph mixed = make_graph(feeds, {"at"},
                                     {node("make", "SequenceConstruct", {"a", "b", "c"}, {"seq"}),
                                      node("pick", "SequenceAt", {"seq", "pos"}, {"at"})});
  expect_cuda_error(mixed, feeds, "make", "cannot join a sequence of float32");
}

TEST(CudaSequences, InsertEraseConcatAndDeviceLayers) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::map<std::string, Tensor> feeds{
      {"a", f32({1, 2}, {2})}, {"b", f32({3}, {1})}, {"c", f32({4, 5, 6}, {3})}, {"p0", i64(0)}, {"pm1", i64(-1)}};
  const ir::Graph g = insert_erase_graph(feeds);
  compare(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  EXPECT_EQ(got.at("all").shape(), (Shape{6}));
  EXPECT_EQ(got.at("all").data<float>()[0], 3.f);      // [b, c, a]
  EXPECT_EQ(got.at("n_plus").data<int64_t>()[0], 3);   // Length (uploaded) + 0 on the GPU
  EXPECT_EQ(got.at("scaled").data<float>()[2], 36.f);  // c * c through a SequenceAt view
}

TEST(CudaSequences, EmptySequences) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph at =
      make_graph({{"p", i64(0)}}, {"y"},
                 {node("empty", "SequenceEmpty", {}, {"s"}), node("first", "SequenceAt", {"s", "p"}, {"y"})});
  expect_cuda_error(at, {{"p", i64(0)}}, "first", "length 0");
  const ir::Graph cat = make_graph(
      {{"x", f32({1}, {1})}}, {"y", "x2"},
      {node("empty", "SequenceEmpty", {}, {"s"}), with_int(node("cat", "ConcatFromSequence", {"s"}, {"y"}), "axis", 0),
       node("id", "Identity", {"x"}, {"x2"})});
  expect_cuda_error(cat, {{"x", f32({1}, {1})}}, "cat", "empty sequence");
  const ir::Graph erase =
      make_graph({{"x", f32({1}, {1})}}, {"n", "x2"},
                 {node("empty", "SequenceEmpty", {}, {"s"}), node("pop", "SequenceErase", {"s"}, {"s2"}),
                  node("len", "SequenceLength", {"s2"}, {"n"}), node("id", "Identity", {"x"}, {"x2"})});
  expect_cuda_error(erase, {{"x", f32({1}, {1})}}, "pop", "empty sequence");
  // Insert into an empty sequence: position 0 only.
  std::map<std::string, Tensor> feeds{{"x", f32({1}, {1})}, {"p", i64(0)}};
  const ir::Graph ins =
      make_graph(feeds, {"n"},
                 {node("empty", "SequenceEmpty", {}, {"s"}), node("put", "SequenceInsert", {"s", "x", "p"}, {"s2"}),
                  node("len", "SequenceLength", {"s2"}, {"n"})});
  compare(ins, feeds);
  feeds["p"] = i64(1);
  expect_cuda_error(ins, feeds, "put", "valid: 0 to 0");
}

const Tensor kX = f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2});

TEST(CudaSequences, SplitToSequenceWithoutSplit) {
  KILNRT_SKIP_WITHOUT_GPU();
  compare(split_graph({{"x", kX}}, 0, 1), {{"x", kX}});
  compare(split_graph({{"x", kX}}, -1, 0), {{"x", kX}});  // squeezed pieces stacked back with new_axis
  const auto got = cudatest::run_cuda(split_graph({{"x", kX}}, -1, 0), {{"x", kX}});
  EXPECT_EQ(got.at("last").shape(), (Shape{5}));
  EXPECT_EQ(got.at("last").data<float>()[4], 9.f);
  EXPECT_EQ(got.at("back").shape(), (Shape{5, 2}));
}

TEST(CudaSequences, SplitToSequenceScalarAndListSplits) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::map<std::string, Tensor> feeds{{"x", kX}, {"split", i64(2)}};  // 2, 2, 1: uneven
  const ir::Graph g = split_graph(feeds, 0, 1);
  compare(g, feeds);
  EXPECT_EQ(cudatest::run_cuda(g, feeds).at("n").data<int64_t>()[0], 3);
  std::map<std::string, Tensor> list{{"x", kX}, {"split", i64s({1, 0, 4})}};  // a 0-row piece
  const ir::Graph gl = split_graph(list, 0, 1);
  compare(gl, list);
  std::map<std::string, Tensor> cols{{"x", kX}, {"split", i64s({1, 1})}};  // along axis 1: strided pieces
  compare(split_graph(cols, 1, 1), cols);
  const Tensor x3 =
      f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, {2, 3, 4});
  std::map<std::string, Tensor> mid{{"x", x3}, {"split", i64s({2, 1})}};  // middle axis of a 3-D tensor
  compare(split_graph(mid, 1, 1), mid);
  list["split"] = i64s({2, 2});
  expect_cuda_error(gl, list, "split", "add up to 4");
  feeds["split"] = i64(0);
  expect_cuda_error(g, feeds, "split", "must be positive");
}

TEST(CudaSequences, IdentityOfASequence) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::map<std::string, Tensor> feeds{{"a", f32({1, 2}, {1, 2})}, {"b", f32({3, 4, 5, 6}, {2, 2})}};
  const ir::Graph g = identity_graph(feeds);
  compare(g, feeds);
  EXPECT_EQ(cudatest::run_cuda(g, feeds).at("y").shape(), (Shape{3, 2}));
}

TEST(CudaSequencesControlFlow, IfReturnsASequence) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::map<std::string, Tensor> feeds{{"c", boolean(true)}, {"x", f32({7, 8, 9}, {3})}};
  const ir::Graph g = if_graph(feeds);
  compare(g, feeds);
  EXPECT_EQ(cudatest::run_cuda(g, feeds).at("n").data<int64_t>()[0], 2);
  feeds["c"] = boolean(false);
  compare(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  EXPECT_EQ(got.at("n").data<int64_t>()[0], 3);
  EXPECT_EQ(got.at("first").shape(), Shape{});
}

TEST(CudaSequencesControlFlow, LoopCarriesASequence) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string path = ::testing::TempDir() + "/kilnrt_cuda_sequence_list_model.onnx";
  std::ofstream(path, std::ios::binary) << seqtest::list_model().serialize();
  ir::Graph g = ir::import_onnx_file(path);
  passes::infer_shapes(g);
  std::vector<float> xv(15);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) * 0.5f - 3.f;
  const std::map<std::string, Tensor> feeds{{"x", f32(xv, {5, 3})}};
  compare(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  ASSERT_EQ(got.at("y").shape(), (Shape{5, 3}));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(got.at("y").data<float>()[i], 2.f * xv[i]) << i;
  // Built as a CUDA engine file and run through the public API.
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes = build_engine(path, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "list_model.engine");
  const auto out = engine->run({{"x", f32(xv, {5, 3})}});
  ASSERT_EQ(out.at("y").shape(), (Shape{5, 3}));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(out.at("y").data<float>()[i], 2.f * xv[i]) << i;
}

TEST(CudaSequencesControlFlow, SequenceMapRunsTheBodyPerElement) {
  KILNRT_SKIP_WITHOUT_GPU();
  const ir::Graph g = map_graph(kMapFeeds);
  compare(g, kMapFeeds);
  const auto got = cudatest::run_cuda(g, kMapFeeds);
  ASSERT_EQ(got.at("sum").shape(), (Shape{5}));
  EXPECT_EQ(got.at("sum").data<float>()[4], 155.f);
  EXPECT_EQ(got.at("shape1").data<int64_t>()[0], 3);
  // Sequences of different lengths: an error naming the node.
  ir::Graph bad = g;
  bad.nodes[1].inputs = {"b0"};
  expect_cuda_error(bad, kMapFeeds, "map", "sequence input 1 has 1 elements, input_sequence has 2");
}

TEST(CudaSequences, ConcatFromSequenceNewAxisAndMismatch) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::map<std::string, Tensor> feeds{{"a", f32({1, 2, 3}, {3})}, {"b", f32({4, 5, 6}, {3})}};
  auto stack = [&](int64_t axis) {
    return make_graph(
        feeds, {"y"},
        {node("make", "SequenceConstruct", {"a", "b"}, {"s"}),
         with_int(with_int(node("stack", "ConcatFromSequence", {"s"}, {"y"}), "axis", axis), "new_axis", 1)});
  };
  compare(stack(-1), feeds);
  compare(stack(0), feeds);
  const auto got = cudatest::run_cuda(stack(-1), feeds);
  EXPECT_EQ(got.at("y").shape(), (Shape{3, 2}));
  EXPECT_EQ(got.at("y").data<float>()[1], 4.f);
  feeds["b"] = f32({4, 5}, {2});
  expect_cuda_error(stack(-1), feeds, "stack", "differ outside axis");
}

}  // namespace
