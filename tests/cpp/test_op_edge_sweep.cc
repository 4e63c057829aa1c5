// Table-driven edge-case sweeps across many registry ops at once: empty tensors through every elementwise unary op,
// broadcasting corners (size-1 and size-0 dims, rank differences) through the binary ops against an in-test
// reference, negative axes that must give the positive axis' result, and int64 extremes that must survive exactly.
// Each table names its ops; an op missing from the registry fails the test (no silent skip).
#include <cmath>
#include <functional>
#include <limits>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// ---- empty tensors ---------------------------------------------------------------------------------------------
TEST(OpEdgeSweep, UnaryOpsKeepEmptyShapes) {
  const char* float_ops[] = {"Abs",         "Acos",
                             "Acosh",       "Asin",
                             "Asinh",       "Atan",
                             "Atanh",       "Ceil",
                             "Celu",        "Cos",
                             "Cosh",        "Elu",
                             "Erf",         "Exp",
                             "Floor",       "Gelu",
                             "HardSigmoid", "HardSwish",
                             "Identity",    "LeakyRelu",
                             "Log",         "Mish",
                             "Neg",         "Reciprocal",
                             "Relu",        "Round",
                             "Selu",        "Shrink",
                             "Sigmoid",     "Sign",
                             "Sin",         "Sinh",
                             "Softplus",    "Softsign",
                             "Sqrt",        "Tan",
                             "Tanh",        "ThresholdedRelu",
                             "Softmax",     "LogSoftmax",
                             "Hardmax"};
  Tensor empty = Tensor::empty(DType::kFloat32, {0, 3});
  for (const char* op : float_ops) {
    Node n(op, 1);
    Tensor y = run1(n.node, {&empty});
    EXPECT_EQ(y.shape(), (Shape{0, 3})) << op;
    EXPECT_EQ(y.dtype(), DType::kFloat32) << op;
    ir::TensorType t = ttype(DType::kFloat32, {0, 3});
    auto types = infer(n.node, {&t});
    ASSERT_TRUE(types[0].has_shape) << op;
    EXPECT_EQ(ir::sym_shape_to_string(types[0].shape), "0x3") << op;
  }
  for (const char* op : {"IsNaN", "IsInf"}) {
    Tensor y = run1(Node(op, 1).node, {&empty});
    EXPECT_EQ(y.shape(), (Shape{0, 3})) << op;
    EXPECT_EQ(y.dtype(), DType::kBool) << op;
  }
  Tensor empty_bool = boolean({}, {2, 0});
  EXPECT_EQ(run1(Node("Not", 1).node, {&empty_bool}).shape(), (Shape{2, 0}));
}

// ---- broadcasting corners --------------------------------------------------------------------------------------
struct BinaryOp {
  const char* op;
  std::function<double(double, double)> ref;
  bool to_bool = false;
};

std::vector<BinaryOp> binary_ops() {
  return {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Div", [](double a, double b) { return a / b; }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }},
      {"Max", [](double a, double b) { return std::max(a, b); }},
      {"Min", [](double a, double b) { return std::min(a, b); }},
      {"Mean", [](double a, double b) { return (a + b) / 2; }},
      {"Sum", [](double a, double b) { return a + b; }},
      {"PRelu", [](double a, double b) { return a < 0 ? a * b : a; }},
      {"Equal", [](double a, double b) { return a == b ? 1.0 : 0.0; }, true},
      {"Greater", [](double a, double b) { return a > b ? 1.0 : 0.0; }, true},
      {"Less", [](double a, double b) { return a < b ? 1.0 : 0.0; }, true},
      {"GreaterOrEqual", [](double a, double b) { return a >= b ? 1.0 : 0.0; }, true},
      {"LessOrEqual", [](double a, double b) { return a <= b ? 1.0 : 0.0; }, true},
  };
}

// Right-aligned numpy broadcasting reference.
std::vector<double> broadcast_ref(const Tensor& a, const Tensor& b, const Shape& out,
                                  const std::function<double(double, double)>& f) {
  const std::vector<double> av = values(a), bv = values(b);
  std::vector<double> y;
  const int64_t n = shape_numel(out);
  const size_t r = out.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t coord = rem % out[d];
      rem /= out[d];
      const int64_t da = d + a.shape().size() >= r ? a.shape()[d + a.shape().size() - r] : 1;
      const int64_t db = d + b.shape().size() >= r ? b.shape()[d + b.shape().size() - r] : 1;
      if (d + a.shape().size() >= r) {
        ia += (da == 1 ? 0 : coord) * sa;
        sa *= da;
      }
      if (d + b.shape().size() >= r) {
        ib += (db == 1 ? 0 : coord) * sb;
        sb *= db;
      }
    }
    y.push_back(f(av[static_cast<size_t>(ia)], bv[static_cast<size_t>(ib)]));
  }
  return y;
}

TEST(OpEdgeSweep, BinaryBroadcastCorners) {
  struct Shapes {
    Shape a, b, out;
  };
  const Shapes cases[] = {
      {{2, 1, 3}, {4, 1}, {2, 4, 3}},  // both sides broadcast, rank differs
      {{3}, {2, 1}, {2, 3}},           // vector against column
      {{}, {2, 3}, {2, 3}},            // scalar
      {{0, 1, 3}, {4, 1}, {0, 4, 3}},  // empty dim broadcast with others
      {{1, 1}, {1}, {1, 1}},           // all ones
  };
  for (const BinaryOp& op : binary_ops()) {
    uint32_t seed = 11;
    for (const Shapes& s : cases) {
      if (std::string(op.op) == "PRelu" && s.a.size() < s.b.size()) continue;  // PRelu: slope broadcasts to X
      Tensor a = ramp(s.a, -2.f, 2.f, seed++), b = ramp(s.b, 0.25f, 2.f, seed++);
      Node n(op.op, 2);
      Tensor y = run1(n.node, {&a, &b});
      const std::string what = std::string(op.op) + " " + shape_to_string(s.a) + " with " + shape_to_string(s.b);
      EXPECT_EQ(y.shape(), s.out) << what;
      EXPECT_EQ(y.dtype(), op.to_bool ? DType::kBool : DType::kFloat32) << what;
      expect_values(y, broadcast_ref(a, b, s.out, op.ref), 1e-5, what);
      ir::TensorType ta = ttype(DType::kFloat32, ir::shape_to_sym(s.a)),
                     tb = ttype(DType::kFloat32, ir::shape_to_sym(s.b));
      EXPECT_EQ(ir::sym_shape_to_string(infer(n.node, {&ta, &tb})[0].shape), shape_to_string(s.out)) << what;
    }
    // Incompatible dims are an error naming the node.
    Tensor a = ramp({2, 3}), b = ramp({4});
    Node bad(op.op, 2, 1, std::string("bad_") + op.op);
    try {
      run1(bad.node, {&a, &b});
      ADD_FAILURE() << op.op << " broadcast 2x3 with 4";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad.node.name), std::string::npos) << e.what();
    }
  }
}

// ---- negative axes ---------------------------------------------------------------------------------------------
struct AxisCase {
  const char* op;
  size_t num_inputs;
  std::function<std::vector<Tensor>()> inputs;
  const char* attr = "axis";
};

TEST(OpEdgeSweep, NegativeAxisMatchesPositive) {
  const Tensor x = ramp({2, 3, 4}, -3.f, 3.f, 5);
  const std::vector<AxisCase> cases = {
      {"Softmax", 1, [&] { return std::vector<Tensor>{x}; }},
      {"LogSoftmax", 1, [&] { return std::vector<Tensor>{x}; }},
      {"Hardmax", 1, [&] { return std::vector<Tensor>{x}; }},
      {"ArgMax", 1, [&] { return std::vector<Tensor>{x}; }},
      {"ArgMin", 1, [&] { return std::vector<Tensor>{x}; }},
      {"Flatten", 1, [&] { return std::vector<Tensor>{x}; }},
      {"Concat", 2,
       [&] {
         return std::vector<Tensor>{x, x};
       }},
      {"Gather", 2,
       [&] {
         return std::vector<Tensor>{x, i64({3, 0, -1}, {3})};
       }},
      {"GatherElements", 2,
       [&] {
         return std::vector<Tensor>{
             x, i64({0, 1, 2, 3, 3, 2, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {2, 3, 4})};
       }},
      {"CumSum", 2,
       [&] {
         return std::vector<Tensor>{x, i64_scalar(0)};
       },
       nullptr},
      {"Split", 1, [&] { return std::vector<Tensor>{x}; }},
      {"Compress", 2,
       [&] {
         return std::vector<Tensor>{x, boolean({1, 0, 1, 1}, {4})};
       }},
      {"TopK", 2,
       [&] {
         return std::vector<Tensor>{x, i64({2}, {1})};
       }},
      {"OneHot", 3,
       [&] {
         return std::vector<Tensor>{i64({0, 2, 1}, {3}), i64_scalar(3), f32({0, 1}, {2})};
       }},
      {"ReverseSequence", 2,
       [&] {
         return std::vector<Tensor>{x, i64({1, 3}, {2})};
       },
       nullptr},
  };
  for (const AxisCase& c : cases) {
    ASSERT_NE(OpRegistry::instance().find("", c.op, 20), nullptr) << c.op << " is missing from the registry";
    std::vector<Tensor> in = c.inputs();
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : in) ptrs.push_back(&t);
    const int64_t rank = c.op == std::string("OneHot") ? 2 : 3;  // OneHot's output rank
    const size_t outs = std::string(c.op) == "TopK" ? 2 : std::string(c.op) == "Split" ? 2 : 1;
    if (std::string(c.op) == "CumSum") {
      // CumSum's axis is an input: -1 against 2.
      Tensor neg = i64_scalar(-1), pos = i64_scalar(2);
      std::vector<const Tensor*> pn = {&in[0], &neg}, pp = {&in[0], &pos};
      expect_values(run1(Node("CumSum", 2).node, pn), values(run1(Node("CumSum", 2).node, pp)), 1e-6, "CumSum");
      continue;
    }
    if (std::string(c.op) == "ReverseSequence") {
      Node neg("ReverseSequence", 2), pos("ReverseSequence", 2);
      neg.i("batch_axis", 0).i("time_axis", 1);
      pos.i("batch_axis", 0).i("time_axis", 1);
      expect_values(run1(neg.node, ptrs), values(run1(pos.node, ptrs)), 0, "ReverseSequence");
      continue;
    }
    Node neg(c.op, c.num_inputs, outs), pos(c.op, c.num_inputs, outs);
    neg.i(c.attr, -1);
    pos.i(c.attr, rank - 1);
    std::vector<Tensor> yn = run(neg.node, ptrs), yp = run(pos.node, ptrs);
    ASSERT_EQ(yn.size(), yp.size()) << c.op;
    for (size_t k = 0; k < yn.size(); ++k) {
      EXPECT_EQ(yn[k].shape(), yp[k].shape()) << c.op << " output " << k;
      expect_values(yn[k], values(yp[k]), 0, std::string(c.op) + " axis -1 vs " + std::to_string(rank - 1));
    }
    // An axis below -rank is an error naming the node.
    Node bad(c.op, c.num_inputs, outs, std::string("bad_axis_") + c.op);
    bad.i(c.attr, -rank - 1);
    EXPECT_THROW(run(bad.node, ptrs), Error) << c.op;
  }
  // Reductions: negative entries in axes (attribute before opset 18, input from 18).
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    Node neg(op, 1), pos(op, 1);
    neg.ints("axes", {-1, -3});
    pos.ints("axes", {0, 2});
    expect_values(run1(neg.node, {&x}, 13), values(run1(pos.node, {&x}, 13)), 1e-6, op);
    Tensor an = i64({-1, -3}, {2}), ap = i64({2, 0}, {2});
    Node n18(op, 2);
    expect_values(run1(n18.node, {&x, &an}, 18), values(run1(n18.node, {&x, &ap}, 18)), 1e-6, op);
  }
  // Squeeze / Unsqueeze take axes as an input from opset 13.
  Tensor x1 = ramp({2, 1, 3});
  Tensor sq_n = i64({-2}, {1}), sq_p = i64({1}, {1});
  EXPECT_EQ(run1(Node("Squeeze", 2).node, {&x1, &sq_n}).shape(), (Shape{2, 3}));
  EXPECT_EQ(run1(Node("Squeeze", 2).node, {&x1, &sq_p}).shape(), (Shape{2, 3}));
  Tensor un = i64({-1}, {1});
  EXPECT_EQ(run1(Node("Unsqueeze", 2).node, {&x1, &un}).shape(), (Shape{2, 1, 3, 1}));
}

// ---- int64 extremes --------------------------------------------------------------------------------------------
TEST(OpEdgeSweep, Int64ExtremesSurviveExactly) {
  Tensor a = i64({kMin, kMax, -1, 0, 1}, {5});
  Tensor b = i64({kMax, kMin, 0, 0, kMax}, {5});
  EXPECT_EQ(ints_of(run1(Node("Max", 2).node, {&a, &b})), (std::vector<int64_t>{kMax, kMax, 0, 0, kMax}));
  EXPECT_EQ(ints_of(run1(Node("Min", 2).node, {&a, &b})), (std::vector<int64_t>{kMin, kMin, -1, 0, 1}));
  EXPECT_EQ(values(run1(Node("Equal", 2).node, {&a, &a})), (std::vector<double>{1, 1, 1, 1, 1}));
  EXPECT_EQ(values(run1(Node("Less", 2).node, {&a, &b})), (std::vector<double>{1, 0, 1, 0, 1}));
  EXPECT_EQ(values(run1(Node("Greater", 2).node, {&a, &b})), (std::vector<double>{0, 1, 0, 0, 0}));
  Tensor c = i64({kMax - 1, kMax}, {2});
  EXPECT_EQ(values(run1(Node("Less", 2).node, {&c, &c})), (std::vector<double>{0, 0}));
  Tensor d = i64({kMax - 1}, {1}), e = i64({kMax}, {1});
  // kMax - 1 and kMax are the same double: a comparison through double would call them equal.
  EXPECT_EQ(values(run1(Node("Less", 2).node, {&d, &e})), (std::vector<double>{1}))
      << "Less must compare int64 exactly";
  EXPECT_EQ(values(run1(Node("Equal", 2).node, {&d, &e})), (std::vector<double>{0})) << "Equal must compare exactly";
  EXPECT_EQ(ints_of(run1(Node("Neg", 1).node, {&e})), (std::vector<int64_t>{-kMax}));
  EXPECT_EQ(ints_of(run1(Node("Sign", 1).node, {&a})), (std::vector<int64_t>{-1, 1, -1, 0, 1}));
  EXPECT_EQ(ints_of(run1(Node("Identity", 1).node, {&a})), ints_of(a));
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).node, {&a})), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints_of(run1(Node("ArgMin", 1).node, {&a})), (std::vector<int64_t>{0}));
  Tensor near = i64({kMax - 1, kMax, kMax - 2}, {3});
  EXPECT_EQ(ints_of(run1(Node("ArgMax", 1).node, {&near})), (std::vector<int64_t>{1})) << "ArgMax must compare exactly";
  EXPECT_EQ(ints_of(run1(Node("Concat", 2).i("axis", 0).node, {&a, &b})),
            (std::vector<int64_t>{kMin, kMax, -1, 0, 1, kMax, kMin, 0, 0, kMax}));
  Tensor cond = boolean({1, 0, 1, 0, 1}, {5});
  EXPECT_EQ(ints_of(run1(Node("Where", 3).node, {&cond, &a, &b})), (std::vector<int64_t>{kMin, kMin, -1, 0, 1}));
  Tensor idx = i64({1, 0, -5}, {3});
  EXPECT_EQ(ints_of(run1(Node("Gather", 2).node, {&a, &idx})), (std::vector<int64_t>{kMax, kMin, kMin}));
  Tensor shape = i64({5, 1}, {2});
  EXPECT_EQ(ints_of(run1(Node("Reshape", 2).node, {&a, &shape})), ints_of(a));
  Tensor cast = run1(Node("Cast", 1).i("to", 7).node, {&a});
  EXPECT_EQ(ints_of(cast), ints_of(a));
  Tensor reps = i64({2}, {1});
  EXPECT_EQ(ints_of(run1(Node("Tile", 2).node, {&e, &reps})), (std::vector<int64_t>{kMax, kMax}));
  Tensor lo = i64_scalar(-1), hi = i64_scalar(kMax);
  EXPECT_EQ(ints_of(run1(Node("Clip", 3).node, {&a, &lo, &hi})), (std::vector<int64_t>{-1, kMax, -1, 0, 1}));
}

// Reductions of int64 extremes: ReduceMax / ReduceMin pick an element, so the result must be exact.
TEST(OpEdgeSweep, Int64ReduceMaxMinAreExact) {
  Tensor a = i64({kMax - 1, kMax, kMin + 1, kMin}, {2, 2});
  Node mx("ReduceMax", 1), mn("ReduceMin", 1);
  mx.ints("axes", {1}).i("keepdims", 0);
  mn.ints("axes", {1}).i("keepdims", 0);
  EXPECT_EQ(ints_of(run1(mx.node, {&a}, 13)), (std::vector<int64_t>{kMax, kMin + 1}));
  EXPECT_EQ(ints_of(run1(mn.node, {&a}, 13)), (std::vector<int64_t>{kMax - 1, kMin}));
}

}  // namespace
}  // namespace kilnrt::ops::optest
