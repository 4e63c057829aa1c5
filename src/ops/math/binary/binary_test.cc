// Integer Div / Mod edge cases on the CPU reference, in the kernels, in constant folding and in symbolic shape
// arithmetic: the most negative value divided by -1 wraps (numpy), x % -1 is 0, division by zero is refused.
#include <cstdint>
#include <limits>

#include "ops/math/op_test_util.h"
#include "ops/shape/sym_value.h"
#include "passes/constant_folding.h"

namespace kilnrt::ops::optest {
namespace {

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();

TEST(BinaryIntDiv, MostNegativeByMinusOneWrapsInt32) {
  Tensor a = i32({kMin32, kMin32, 7, -7}, {4});
  Tensor b = i32({-1, 1, -1, 2}, {4});
  EXPECT_EQ(ints_of(run1(Node("Div", 2).node, {&a, &b})), (std::vector<int64_t>{kMin32, kMin32, -7, -3}));
  EXPECT_EQ(ints_of(run1(Node("Mod", 2).node, {&a, &b})), (std::vector<int64_t>{0, 0, 0, 1}));
  Node fm("Mod", 2);
  fm.i("fmod", 1);
  EXPECT_EQ(ints_of(run1(fm.node, {&a, &b})), (std::vector<int64_t>{0, 0, 0, -1}));
}

TEST(BinaryIntDiv, MostNegativeByMinusOneWrapsInt64) {
  Tensor a = i64({kMin64, kMin64, 9, -9});
  Tensor m1 = i64_scalar(-1);
  EXPECT_EQ(ints_of(run1(Node("Div", 2).node, {&a, &m1})), (std::vector<int64_t>{kMin64, kMin64, -9, 9}));
  EXPECT_EQ(ints_of(run1(Node("Mod", 2).node, {&a, &m1})), (std::vector<int64_t>{0, 0, 0, 0}));
  Node fm("Mod", 2);
  fm.i("fmod", 1);
  EXPECT_EQ(ints_of(run1(fm.node, {&a, &m1})), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(BinaryIntDiv, NarrowSignedTypesWrapToo) {
  Tensor a = i8({-128, 100}, {2});
  Tensor b = i8({-1, -1}, {2});
  EXPECT_EQ(ints_of(run1(Node("Div", 2).node, {&a, &b})), (std::vector<int64_t>{-128, -100}));
  EXPECT_EQ(ints_of(run1(Node("Mod", 2).node, {&a, &b})), (std::vector<int64_t>{0, 0}));
}

TEST(BinaryIntDiv, DivisionByZeroStillRefused) {
  Tensor a = i64({kMin64, 1});
  Tensor z = i64({-1, 0});
  Node d("Div", 2);
  expect_error_naming([&] { run1(d.node, {&a, &z}); }, d.node, ErrorCode::kInvalidArgument, "division by zero");
  Node m("Mod", 2);
  expect_error_naming([&] { run1(m.node, {&a, &z}); }, m.node, ErrorCode::kInvalidArgument, "division by zero");
}

TEST(BinaryIntDiv, ConstantFoldingWraps) {
  for (DType dt : {DType::kInt32, DType::kInt64}) {
    ir::Graph g;
    g.opsets[""] = 17;
    if (dt == DType::kInt32) {
      g.constants["a"] = i32({kMin32}, {1});
      g.constants["b"] = i32({-1}, {1});
    } else {
      g.constants["a"] = i64({kMin64});
      g.constants["b"] = i64({-1});
    }
    Node d("Div", 0, 0, "div");
    d.node.inputs = {"a", "b"};
    d.node.outputs = {"q"};
    Node m("Mod", 0, 0, "mod");
    m.node.inputs = {"a", "b"};
    m.node.outputs = {"r"};
    Node s("Add", 0, 0, "sum");
    s.node.inputs = {"q", "r"};
    s.node.outputs = {"y"};
    g.nodes = {d.node, m.node, s.node};
    g.outputs = {"y"};
    EXPECT_EQ(passes::fold_constants(g), 2u);
    ASSERT_TRUE(g.is_constant("q") && g.is_constant("r"));
    const int64_t expect_q = dt == DType::kInt32 ? int64_t(kMin32) : kMin64;
    EXPECT_EQ(ints_of(g.constants.at("q")), (std::vector<int64_t>{expect_q}));
    EXPECT_EQ(ints_of(g.constants.at("r")), (std::vector<int64_t>{0}));
  }
}

TEST(BinaryIntDiv, SymbolicDivision) {
  EXPECT_EQ(sym_binary('/', SymInt::of(kMin64), SymInt::of(-1)), SymInt::of(kMin64));
  EXPECT_EQ(sym_binary('/', SymInt::of(-7), SymInt::of(2)), SymInt::of(-3));
  EXPECT_FALSE(sym_binary('/', SymInt::of(5), SymInt::of(0)).known);
  // Through Div's shape function with constant operands.
  Tensor a = i64({kMin64, 6});
  Tensor b = i64_scalar(-1);
  ir::TensorType ta = ttype(DType::kInt64, {ir::Dim(2)});
  ir::TensorType tb = ttype(DType::kInt64, {});
  auto out = infer(Node("Div", 2).node, {&ta, &tb}, {&a, &b});
  ASSERT_TRUE(out[0].sym_value.has_value());
  ASSERT_EQ(out[0].sym_value->size(), 2u);
  EXPECT_EQ(dim_to_sym_int((*out[0].sym_value)[0]), SymInt::of(kMin64));
  EXPECT_EQ(dim_to_sym_int((*out[0].sym_value)[1]), SymInt::of(-6));
}

}  // namespace
}  // namespace kilnrt::ops::optest
