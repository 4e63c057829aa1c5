// Reductions (Reduce*), ArgMax/ArgMin, CumSum and TopK on the CPU reference backend, checked against naive loops
// and hand-computed values: axes as attribute and as input, keepdims, noop_with_empty_axes, negative axes, empty
// reductions, NaN propagation, ties, and shape functions.
#include <cmath>
#include <limits>
#include <string>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(OpsReduceRegistry, EveryOpHasKernelAndShapeFunction) {
  const char* ops[] = {"ReduceMean", "ReduceSum", "ReduceMax",       "ReduceMin",    "ReduceProd",
                       "ReduceL1",   "ReduceL2",  "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
                       "ArgMax",     "ArgMin",    "CumSum",          "TopK"};
  for (const char* op : ops)
    for (int64_t opset : {11, 13, 18, 20, 21}) {
      const OpSchema* s = OpRegistry::instance().find("", op, opset);
      ASSERT_NE(s, nullptr) << op << " at opset " << opset;
      EXPECT_TRUE(static_cast<bool>(s->cpu) && static_cast<bool>(s->infer)) << op;
    }
}

// Naive mean over the last two axes of [n, c, h, w] with keepdims.
std::vector<double> naive_mean_hw(const Tensor& x) {
  const Shape& s = x.shape();
  std::vector<double> out;
  for (int64_t nc = 0; nc < s[0] * s[1]; ++nc) {
    double acc = 0;
    for (int64_t k = 0; k < s[2] * s[3]; ++k) acc += x.data<float>()[nc * s[2] * s[3] + k];
    out.push_back(acc / static_cast<double>(s[2] * s[3]));
  }
  return out;
}

TEST(OpsReduce, MeanOverSpatialAxesInputAndAttribute) {
  Tensor x = ramp({2, 96, 14, 14}, -3, 3, 11);  // big enough for the parallel path
  Tensor axes = i64({-2, -1});
  Tensor y = run1(Node("ReduceMean", 2).i("keepdims", 1).node, {&x, &axes}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 96, 1, 1}));
  expect_values(y, naive_mean_hw(x), 1e-5);
  Tensor old = run1(Node("ReduceMean", 1).ints("axes", {2, 3}).i("keepdims", 0).node, {&x}, 13);
  EXPECT_EQ(old.shape(), (Shape{2, 96}));
  expect_values(old, naive_mean_hw(x), 1e-5);
}

TEST(OpsReduce, SumAxesKeepdimsNoopAndAll) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor ax0 = i64({0});
  expect_values(run1(Node("ReduceSum", 2).node, {&x, &ax0}, 13), {5, 7, 9});
  EXPECT_EQ(run1(Node("ReduceSum", 2).node, {&x, &ax0}, 13).shape(), (Shape{1, 3}));
  Tensor ax1 = i64({-1});
  Tensor r1 = run1(Node("ReduceSum", 2).i("keepdims", 0).node, {&x, &ax1}, 13);
  EXPECT_EQ(r1.shape(), (Shape{2}));
  expect_values(r1, {6, 15});
  Tensor all = run1(Node("ReduceSum", 1).i("keepdims", 0).node, {&x}, 13);
  EXPECT_EQ(all.rank(), 0);
  expect_values(all, {21});
  Tensor empty_axes = i64({}, {0});
  Tensor noop = run1(Node("ReduceSum", 2).i("noop_with_empty_axes", 1).node, {&x, &empty_axes}, 13);
  EXPECT_EQ(noop.shape(), x.shape());
  expect_values(noop, {1, 2, 3, 4, 5, 6});
  expect_values(run1(Node("ReduceSum", 2).node, {&x, &empty_axes}, 13), {21});
  Node bad("ReduceSum", 2);
  Tensor ax5 = i64({5});
  expect_error_naming([&] { run1(bad.node, {&x, &ax5}, 13); }, bad.node, ErrorCode::kInvalidModel);
}

TEST(OpsReduce, OtherKindsAgainstFormulas) {
  Tensor x = f32({1, -2, 3, 0.5f, 4, -1}, {2, 3});
  Tensor ax = i64({1});
  auto red = [&](const char* op) { return run1(Node(op, 2).i("keepdims", 0).node, {&x, &ax}, 18); };
  expect_values(red("ReduceMax"), {3, 4});
  expect_values(red("ReduceMin"), {-2, -1});
  expect_values(red("ReduceProd"), {-6, -2});
  expect_values(red("ReduceL1"), {6, 5.5});
  expect_values(red("ReduceL2"), {std::sqrt(14.0), std::sqrt(17.25)}, 1e-6);
  expect_values(red("ReduceSumSquare"), {14, 17.25});
  expect_values(red("ReduceLogSumExp"),
                {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
                 std::log(std::exp(0.5) + std::exp(4.0) + std::exp(-1.0))},
                1e-6);
  Tensor pos = f32({1, 2, 3}, {1, 3});
  expect_values(run1(Node("ReduceLogSum", 2).i("keepdims", 0).node, {&pos, &ax}, 18), {std::log(6.0)}, 1e-6);
  // LogSumExp is stable for large values.
  Tensor big = f32({1000, 1000}, {1, 2});
  expect_values(run1(Node("ReduceLogSumExp", 2).node, {&big, &ax}, 18), {1000 + std::log(2.0)}, 1e-6);
}

TEST(OpsReduce, NaNPropagatesThroughMaxMin) {
  Tensor x = f32({1, kNaN, 3, 4, 5, 6}, {2, 3});
  Tensor ax = i64({1});
  expect_values(run1(Node("ReduceMax", 2).node, {&x, &ax}, 18), {kNaN, 6});
  expect_values(run1(Node("ReduceMin", 2).node, {&x, &ax}, 18), {kNaN, 4});
  expect_values(run1(Node("ReduceSum", 2).node, {&x, &ax}, 18), {kNaN, 15});
}

TEST(OpsReduce, EmptyReductionsAndEmptyOutputs) {
  Tensor x = Tensor::empty(DType::kFloat32, {2, 0});
  Tensor ax = i64({1});
  expect_values(run1(Node("ReduceSum", 2).node, {&x, &ax}, 18), {0, 0});
  expect_values(run1(Node("ReduceProd", 2).node, {&x, &ax}, 18), {1, 1});
  expect_values(run1(Node("ReduceMax", 2).node, {&x, &ax}, 18), {-kInf, -kInf});
  expect_values(run1(Node("ReduceMean", 2).node, {&x, &ax}, 18), {kNaN, kNaN});
  Tensor ax0 = i64({0});
  Tensor y = run1(Node("ReduceSum", 2).node, {&x, &ax0}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 0}));
}

TEST(OpsReduce, IntegerAndHalfDtypes) {
  Tensor x = i64({std::numeric_limits<int64_t>::max() - 5, 3, -7, 2}, {2, 2});
  Tensor ax = i64({1});
  EXPECT_EQ(ints_of(run1(Node("ReduceSum", 2).node, {&x, &ax}, 18)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max() - 2, -5}));
  EXPECT_EQ(ints_of(run1(Node("ReduceMax", 2).node, {&x, &ax}, 18)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max() - 5, 2}));
  Tensor i = i32({4, 9, -3, 1}, {2, 2});
  expect_values(run1(Node("ReduceMin", 2).node, {&i, &ax}, 18), {4, -3});
  Tensor h = f16({1, 2, 3, 4}, {2, 2});
  Tensor m = run1(Node("ReduceMean", 2).node, {&h, &ax}, 18);
  EXPECT_EQ(m.dtype(), DType::kFloat16);
  expect_values(m, {1.5, 3.5}, 0);
}

TEST(OpsReduce, LargeSumOverMiddleAxisMatchesNaive) {
  Tensor x = ramp({40, 64, 30}, -1, 1, 21);
  Tensor ax = i64({1});
  Tensor y = run1(Node("ReduceSum", 2).i("keepdims", 0).node, {&x, &ax}, 18);
  ASSERT_EQ(y.shape(), (Shape{40, 30}));
  std::vector<double> exp;
  for (int64_t a = 0; a < 40; ++a)
    for (int64_t c = 0; c < 30; ++c) {
      double acc = 0;
      for (int64_t b = 0; b < 64; ++b) acc += x.data<float>()[(a * 64 + b) * 30 + c];
      exp.push_back(acc);
    }
  expect_values(y, exp, 1e-5);
}

TEST(OpsReduceInfer, AxesKeepdimsAndSymbolicDims) {
  ir::TensorType x = ttype(DType::kFloat32, {sym("batch"), 576, 7, 7});
  Tensor axes = i64({2, 3});
  ir::TensorType axes_t = ttype(DType::kInt64, {2});
  auto y = infer(Node("ReduceMean", 2).node, {&x, &axes_t}, {nullptr, &axes}, 18);
  EXPECT_EQ(ir::sym_shape_to_string(y[0].shape), "batchx576x1x1");
  auto y2 = infer(Node("ReduceMean", 1).ints("axes", {-1}).i("keepdims", 0).node, {&x}, {}, 13);
  EXPECT_EQ(ir::sym_shape_to_string(y2[0].shape), "batchx576x7");
  // Axes computed at run time: rank known only with keepdims.
  auto y3 = infer(Node("ReduceSum", 2).node, {&x, &axes_t}, {}, 13);
  ASSERT_TRUE(y3[0].has_shape);
  EXPECT_EQ(y3[0].shape.size(), 4u);
  auto y4 = infer(Node("ReduceSum", 2).i("keepdims", 0).node, {&x, &axes_t}, {}, 13);
  EXPECT_FALSE(y4[0].has_shape);
  auto a = infer(Node("ArgMax", 1).i("axis", 1).i("keepdims", 0).node, {&x});
  EXPECT_EQ(a[0].dtype, DType::kInt64);
  EXPECT_EQ(ir::sym_shape_to_string(a[0].shape), "batchx7x7");
  Tensor k = i64({5});
  ir::TensorType k_t = ttype(DType::kInt64, {1});
  auto t = infer(Node("TopK", 2, 2).i("axis", 1).node, {&x, &k_t}, {nullptr, &k});
  EXPECT_EQ(ir::sym_shape_to_string(t[0].shape), "batchx5x7x7");
  EXPECT_EQ(t[1].dtype, DType::kInt64);
}

// ---- ArgMax / ArgMin ------------------------------------------------------------------------------------------
TEST(OpsArg, KeepdimsTiesAndSelectLastIndex) {
  Tensor x = f32({1, 3, 3, 0, 2, 2, 5, 5}, {2, 4});
  Tensor a = run1(Node("ArgMax", 1).i("axis", 1).node, {&x});
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_EQ(a.shape(), (Shape{2, 1}));
  EXPECT_EQ(ints_of(a), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).i("axis", -1).i("select_last_index", 1).node, {&x})),
            (std::vector<int64_t>{2, 3}));
  Tensor mn = run1(Node("ArgMin", 1).i("axis", 0).i("keepdims", 0).node, {&x});
  EXPECT_EQ(mn.shape(), (Shape{4}));
  EXPECT_EQ(ints_of(mn), (std::vector<int64_t>{0, 1, 0, 0}));
  Tensor n = f32({1, kNaN, 7, kNaN}, {4});
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).node, {&n})), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints_of(run1(Node("ArgMin", 1).node, {&n})), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).i("select_last_index", 1).node, {&n})), (std::vector<int64_t>{3}));
  Tensor ints = i32({-5, 9, 9}, {3});
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).node, {&ints})), (std::vector<int64_t>{1}));
  Node bad("ArgMax", 1);
  Tensor empty = Tensor::empty(DType::kFloat32, {2, 0});
  bad.i("axis", 1);
  expect_error_naming([&] { run1(bad.node, {&empty}); }, bad.node, ErrorCode::kInvalidArgument);
}

// ---- CumSum -------------------------------------------------------------------------------------------------
TEST(OpsCumSum, ExclusiveReverseAndAxis) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor ax1 = i64_scalar(1);
  expect_values(run1(Node("CumSum", 2).node, {&x, &ax1}), {1, 3, 6, 4, 9, 15});
  expect_values(run1(Node("CumSum", 2).i("exclusive", 1).node, {&x, &ax1}), {0, 1, 3, 0, 4, 9});
  expect_values(run1(Node("CumSum", 2).i("reverse", 1).node, {&x, &ax1}), {6, 5, 3, 15, 11, 6});
  expect_values(run1(Node("CumSum", 2).i("reverse", 1).i("exclusive", 1).node, {&x, &ax1}), {5, 3, 0, 11, 6, 0});
  Tensor axm2 = i32({-2}, {1});
  expect_values(run1(Node("CumSum", 2).node, {&x, &axm2}), {1, 2, 3, 5, 7, 9});
  Tensor xi = i64({5, -2, 7});
  Tensor ax0 = i64_scalar(0);
  expect_values(run1(Node("CumSum", 2).node, {&xi, &ax0}), {5, 3, 10});
}

// ---- TopK ---------------------------------------------------------------------------------------------------
TEST(OpsTopK, LargestSmallestTiesAndAxis) {
  Tensor x = f32({3, 1, 3, 2, 5, 0, 5, 5}, {2, 4});
  Tensor k2 = i64({2});
  auto top = run(Node("TopK", 2, 2).node, {&x, &k2});
  EXPECT_EQ(top[0].shape(), (Shape{2, 2}));
  expect_values(top[0], {3, 3, 5, 5});
  EXPECT_EQ(ints_of(top[1]), (std::vector<int64_t>{0, 2, 0, 2}));  // ties by lower index
  auto low = run(Node("TopK", 2, 2).i("largest", 0).node, {&x, &k2});
  expect_values(low[0], {1, 2, 0, 5});
  EXPECT_EQ(ints_of(low[1]), (std::vector<int64_t>{1, 3, 1, 0}));
  Tensor k1 = i64({1});
  auto col = run(Node("TopK", 2, 2).i("axis", 0).node, {&x, &k1});
  EXPECT_EQ(col[0].shape(), (Shape{1, 4}));
  expect_values(col[0], {5, 1, 5, 5});
  EXPECT_EQ(ints_of(col[1]), (std::vector<int64_t>{1, 0, 1, 1}));
  Tensor n = f32({1, kNaN, 7}, {3});
  Tensor k3 = i64({3});
  auto nan_top = run(Node("TopK", 2, 2).node, {&n, &k3});
  expect_values(nan_top[0], {kNaN, 7, 1});
  Tensor k0 = i64({0});
  EXPECT_EQ(run(Node("TopK", 2, 2).node, {&x, &k0})[0].shape(), (Shape{2, 0}));
  // Only the indices output requested.
  auto only_idx = run(Node("TopK", 2, 2).omit_output(0).node, {&x, &k1});
  EXPECT_EQ(ints_of(only_idx[1]), (std::vector<int64_t>{0, 0}));
  Node bad("TopK", 2, 2);
  Tensor k9 = i64({9});
  expect_error_naming([&] { run(bad.node, {&x, &k9}); }, bad.node, ErrorCode::kInvalidArgument, "k = 9");
}

}  // namespace
}  // namespace kilnrt::ops::optest
