// Elementwise math, activations, logic and Cast on the CPU reference backend: numerics against hand-computed values
// and naive loops, broadcasting corners, NaN propagation, reduced-precision dtypes, shape functions and errors.
#include <cmath>
#include <limits>
#include <string>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(OpsMathRegistry, EveryOpHasKernelAndShapeFunction) {
  const char* ops[] = {"Add",
                       "Sub",
                       "Mul",
                       "Div",
                       "Pow",
                       "Mod",
                       "Min",
                       "Max",
                       "Sum",
                       "Mean",
                       "Neg",
                       "Abs",
                       "Reciprocal",
                       "Sqrt",
                       "Exp",
                       "Log",
                       "Erf",
                       "Tanh",
                       "Sigmoid",
                       "Relu",
                       "LeakyRelu",
                       "Elu",
                       "Selu",
                       "Celu",
                       "Softplus",
                       "Softsign",
                       "HardSigmoid",
                       "HardSwish",
                       "Gelu",
                       "Mish",
                       "Clip",
                       "Floor",
                       "Ceil",
                       "Round",
                       "Sign",
                       "Sin",
                       "Cos",
                       "IsNaN",
                       "IsInf",
                       "PRelu",
                       "ThresholdedRelu",
                       "Equal",
                       "Less",
                       "LessOrEqual",
                       "Greater",
                       "GreaterOrEqual",
                       "Not",
                       "And",
                       "Or",
                       "Xor",
                       "Where",
                       "Cast",
                       "CastLike"};
  for (const char* op : ops)
    for (int64_t opset : {13, 17, 18, 20, 21}) {
      const std::string name = op;
      if ((name == "HardSwish" && opset < 14) || (name == "Mish" && opset < 18) || (name == "Gelu" && opset < 20) ||
          (name == "CastLike" && opset < 15))
        continue;  // introduced later
      const OpSchema* s = OpRegistry::instance().find("", op, opset);
      ASSERT_NE(s, nullptr) << op << " at opset " << opset;
      EXPECT_TRUE(static_cast<bool>(s->cpu)) << op;
      EXPECT_TRUE(static_cast<bool>(s->infer)) << op;
    }
  EXPECT_EQ(OpRegistry::instance().find("", "Gelu", 19), nullptr);
}

// ---- broadcasting -------------------------------------------------------------------------------------------
TEST(OpsMathBinary, BroadcastColumnByRow) {
  Tensor a = f32({1, 2, 3}, {3, 1});
  Tensor b = f32({10, 20, 30, 40}, {1, 4});
  Tensor y = run1(Node("Add", 2).node, {&a, &b});
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  expect_values(y, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  Tensor z = run1(Node("Sub", 2).node, {&b, &a});
  expect_values(z, {9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37});
}

TEST(OpsMathBinary, ScalarAndRankMismatch) {
  Tensor x = ramp({2, 3, 4});
  Tensor s = f32({2.f}, {});
  Tensor y = run1(Node("Mul", 2).node, {&s, &x});
  EXPECT_EQ(y.shape(), x.shape());
  for (int64_t k = 0; k < x.numel(); ++k) EXPECT_FLOAT_EQ(y.data<float>()[k], 2.f * x.data<float>()[k]);
  // [2,3,4] / [4]
  Tensor d = f32({1, 2, 4, 8});
  Tensor q = run1(Node("Div", 2).node, {&x, &d});
  for (int64_t k = 0; k < x.numel(); ++k)
    EXPECT_FLOAT_EQ(q.data<float>()[k], x.data<float>()[k] / d.data<float>()[k % 4]);
  // [2,1,4] * [3,1] -> [2,3,4]
  Tensor a = ramp({2, 1, 4}, -1, 1, 3);
  Tensor b = f32({1, 2, 3}, {3, 1});
  Tensor m = run1(Node("Mul", 2).node, {&a, &b});
  ASSERT_EQ(m.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        EXPECT_FLOAT_EQ(m.data<float>()[(i * 3 + j) * 4 + k], a.data<float>()[i * 4 + k] * (j + 1));
}

TEST(OpsMathBinary, EmptyAndIncompatibleShapes) {
  Tensor e = Tensor::empty(DType::kFloat32, {0, 3});
  Tensor r = f32({1, 2, 3}, {1, 3});
  Tensor y = run1(Node("Add", 2).node, {&e, &r});
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  Tensor bad = f32({1, 2}, {2});
  Node n("Add", 2);
  expect_error_naming([&] { run1(n.node, {&r, &bad}); }, n.node, ErrorCode::kInvalidArgument);
  // Mixed dtypes are a model error naming the node.
  Tensor ints = i64({1, 2, 3}, {1, 3});
  expect_error_naming([&] { run1(n.node, {&r, &ints}); }, n.node, ErrorCode::kInvalidModel);
}

TEST(OpsMathBinary, LargeBroadcastMatchesNaiveLoop) {
  // Big enough for the OpenMP path; [300,1,70] + [1,40,70] exercises rows with steps 0 and 1.
  Tensor a = ramp({300, 1, 70}, -2, 2, 5);
  Tensor b = ramp({1, 40, 70}, -2, 2, 6);
  Tensor y = run1(Node("Add", 2).node, {&a, &b});
  ASSERT_EQ(y.shape(), (Shape{300, 40, 70}));
  int64_t bad = 0;
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 40; ++j)
      for (int64_t k = 0; k < 70; ++k)
        bad += y.data<float>()[(i * 40 + j) * 70 + k] != a.data<float>()[i * 70 + k] + b.data<float>()[j * 70 + k];
  EXPECT_EQ(bad, 0);
  // Same-shape fast path, big.
  Tensor c = ramp({300, 40, 70}, -2, 2, 7);
  Tensor z = run1(Node("Mul", 2).node, {&y, &c});
  for (int64_t k = 0; k < z.numel(); k += 997)
    EXPECT_FLOAT_EQ(z.data<float>()[k], y.data<float>()[k] * c.data<float>()[k]);
}

TEST(OpsMathBinary, IntegerDivModAndErrors) {
  Tensor a = i64({-7, 7, -7, 7});
  Tensor b = i64({2, -2, -2, 2});
  expect_values(run1(Node("Div", 2).node, {&a, &b}), {-3, -3, 3, 3});
  expect_values(run1(Node("Mod", 2).node, {&a, &b}), {1, -1, -1, 1});               // sign of divisor
  expect_values(run1(Node("Mod", 2).i("fmod", 1).node, {&a, &b}), {-1, 1, -1, 1});  // sign of dividend
  Tensor fa = f32({-7.5f, 7.5f});
  Tensor fb = f32({2.f, -2.f});
  expect_values(run1(Node("Mod", 2).i("fmod", 1).node, {&fa, &fb}), {-1.5, 1.5});
  Tensor zero = i64({1, 0, 1, 1});
  Node div("Div", 2);
  expect_error_naming([&] { run1(div.node, {&a, &zero}); }, div.node, ErrorCode::kInvalidArgument, "division by zero");
  // int64 extremes wrap instead of invoking undefined behaviour.
  Tensor big = i64({std::numeric_limits<int64_t>::max()});
  Tensor one = i64({1});
  expect_values(run1(Node("Sub", 2).node, {&big, &one}),
                {static_cast<double>(std::numeric_limits<int64_t>::max() - 1)});
  EXPECT_EQ(ints_of(run1(Node("Add", 2).node, {&big, &one}))[0], std::numeric_limits<int64_t>::min());
  // int8 / uint8 arithmetic.
  Tensor c = i8({-100, 50}, {2});
  Tensor d = i8({2, 2}, {2});
  expect_values(run1(Node("Mul", 2).node, {&c, &d}), {56, 100});  // -200 wraps to 56
  Tensor u = u8({250, 3}, {2});
  Tensor v = u8({10, 4}, {2});
  expect_values(run1(Node("Add", 2).node, {&u, &v}), {4, 7});
}

TEST(OpsMathBinary, PowWithIntegerExponent) {
  Tensor x = f32({2, -3, 0.5f});
  Tensor e = i64({3, 2, -1});
  expect_values(run1(Node("Pow", 2).node, {&x, &e}), {8, 9, 2});
  Tensor ix = i64({2, 3});
  Tensor fe = f32({10, 0.5f});
  expect_values(run1(Node("Pow", 2).node, {&ix, &fe}), {1024, 1});
}

TEST(OpsMathBinary, VariadicMaxMinPropagateNaN) {
  Tensor a = f32({1, kNaN, 3, -1});
  Tensor b = f32({2, 0, kNaN, -2});
  Tensor c = f32({0.5f}, {1});
  expect_values(run1(Node("Max", 3).node, {&a, &b, &c}), {2, kNaN, kNaN, 0.5});
  expect_values(run1(Node("Min", 3).node, {&a, &b, &c}), {0.5, kNaN, kNaN, -2});
  expect_values(run1(Node("Max", 1).node, {&a}), {1, kNaN, 3, -1});
  Tensor p = f32({1, 2, 3, 4});
  expect_values(run1(Node("Sum", 3).node, {&p, &p, &c}), {2.5, 4.5, 6.5, 8.5});
  expect_values(run1(Node("Mean", 2).node, {&p, &c}), {0.75, 1.25, 1.75, 2.25});
  Tensor ia = i32({5, -9}, {2});
  Tensor ib = i32({7, -10}, {2});
  expect_values(run1(Node("Max", 2).node, {&ia, &ib}), {7, -9});
}

TEST(OpsMathBinary, PReluBroadcastsSlopePerChannel) {
  Tensor x = f32({-1, 2, -3, 4, -5, 6}, {1, 2, 3, 1});
  Tensor slope = f32({0.1f, 0.5f}, {2, 1, 1});
  expect_values(run1(Node("PRelu", 2).node, {&x, &slope}), {-0.1, 2, -0.3, 4, -2.5, 6});
}

// ---- unary --------------------------------------------------------------------------------------------------
TEST(OpsMathUnary, ReluAndFriendsPropagateNaN) {
  Tensor x = f32({-2, -0.5f, 0, 0.5f, 2, kNaN});
  expect_values(run1(Node("Relu", 1).node, {&x}), {0, 0, 0, 0.5, 2, kNaN});
  expect_values(run1(Node("LeakyRelu", 1).f("alpha", 0.1f).node, {&x}), {-0.2, -0.05, 0, 0.5, 2, kNaN});
  expect_values(run1(Node("Abs", 1).node, {&x}), {2, 0.5, 0, 0.5, 2, kNaN});
  expect_values(run1(Node("Neg", 1).node, {&x}), {2, 0.5, 0, -0.5, -2, kNaN});
  expect_values(run1(Node("Sign", 1).node, {&x}), {-1, -1, 0, 1, 1, kNaN});
  expect_values(run1(Node("HardSigmoid", 1).f("alpha", 1.f / 6).f("beta", 0.5f).node, {&x}),
                {1.0 / 6, 5.0 / 12, 0.5, 7.0 / 12, 5.0 / 6, kNaN}, 1e-6);
  expect_values(run1(Node("HardSwish", 1).node, {&x}), {-2.0 / 6, -0.5 * 5 / 12, 0, 0.5 * 7 / 12, 2.0 * 5 / 6, kNaN},
                1e-6);
  expect_values(run1(Node("ThresholdedRelu", 1).f("alpha", 0.4f).node, {&x}), {0, 0, 0, 0.5, 2, kNaN});
  Tensor ix = i32({-3, 0, 5}, {3});
  expect_values(run1(Node("Relu", 1).node, {&ix}), {0, 0, 5});
}

TEST(OpsMathUnary, TranscendentalsMatchFormulas) {
  Tensor x = ramp({64}, -4, 4, 9);
  auto check = [&](const char* op, double (*ref)(double), double tol = 1e-6) {
    Tensor y = run1(Node(op, 1).node, {&x});
    std::vector<double> exp;
    for (double v : values(x)) exp.push_back(ref(v));
    expect_values(y, exp, tol, op);
  };
  check("Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); });
  check("Tanh", [](double v) { return std::tanh(v); });
  check("Erf", [](double v) { return std::erf(v); });
  check("Exp", [](double v) { return std::exp(v); });
  check("Sin", [](double v) { return std::sin(v); });
  check("Cos", [](double v) { return std::cos(v); });
  check("Softplus", [](double v) { return std::log1p(std::exp(v)); });
  check("Softsign", [](double v) { return v / (1 + std::fabs(v)); });
  check("Elu", [](double v) { return v < 0 ? std::exp(v) - 1 : v; });
  check("Mish", [](double v) { return v * std::tanh(std::log1p(std::exp(v))); });
  check("Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check("Selu", [](double v) { return 1.0507009873554805 * (v <= 0 ? 1.6732632423543772 * (std::exp(v) - 1) : v); });
  Tensor g = run1(Node("Gelu", 1).s("approximate", "tanh").node, {&x});
  std::vector<double> exp;
  for (double v : values(x)) exp.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  expect_values(g, exp, 1e-6, "Gelu tanh");
  Tensor pos = f32({0.25f, 4, 0});
  expect_values(run1(Node("Sqrt", 1).node, {&pos}), {0.5, 2, 0});
  expect_values(run1(Node("Log", 1).node, {&pos}), {std::log(0.25), std::log(4.0), -kInf});
  expect_values(run1(Node("Reciprocal", 1).node, {&pos}), {4, 0.25, kInf});
  // Large inputs do not overflow.
  Tensor big = f32({100, -100});
  expect_values(run1(Node("Softplus", 1).node, {&big}), {100, 0});
  expect_values(run1(Node("Sigmoid", 1).node, {&big}), {1, 0});
  Node bad("Gelu", 1);
  bad.s("approximate", "fast");
  expect_error_naming([&] { run1(bad.node, {&x}); }, bad.node, ErrorCode::kInvalidModel);
}

TEST(OpsMathUnary, RoundingIsHalfToEven) {
  Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.7f});
  expect_values(run1(Node("Round", 1).node, {&x}), {0, 2, 2, -0, -2, 2, -3});
  expect_values(run1(Node("Floor", 1).node, {&x}), {0, 1, 2, -1, -2, 2, -3});
  expect_values(run1(Node("Ceil", 1).node, {&x}), {1, 2, 3, -0, -1, 3, -2});
}

TEST(OpsMathUnary, ClipInputsAttributesAndNaN) {
  Tensor x = f32({-5, -1, 0, 1, 5, kNaN});
  Tensor lo = f32({-2.f}, {});
  Tensor hi = f32({2.f}, {});
  expect_values(run1(Node("Clip", 3).node, {&x, &lo, &hi}, 13), {-2, -1, 0, 1, 2, kNaN});
  expect_values(run1(Node("Clip", 3).node, {&x, nullptr, &hi}, 13), {-5, -1, 0, 1, 2, kNaN});
  expect_values(run1(Node("Clip", 1).f("min", -0.5f).f("max", 0.5f).node, {&x}, 6), {-0.5, -0.5, 0, 0.5, 0.5, kNaN});
  Tensor ix = i64({-9, 3, 9});
  Tensor ilo = i64({0}, {});
  expect_values(run1(Node("Clip", 2).node, {&ix, &ilo}, 13), {0, 3, 9});
}

TEST(OpsMathUnary, IsNaNAndIsInf) {
  Tensor x = f32({1, kNaN, kInf, -kInf});
  Tensor n = run1(Node("IsNaN", 1).node, {&x});
  EXPECT_EQ(n.dtype(), DType::kBool);
  expect_values(n, {0, 1, 0, 0});
  expect_values(run1(Node("IsInf", 1).node, {&x}), {0, 0, 1, 1});
  expect_values(run1(Node("IsInf", 1).i("detect_negative", 0).node, {&x}), {0, 0, 1, 0});
  expect_values(run1(Node("IsInf", 1).i("detect_positive", 0).node, {&x}), {0, 0, 0, 1});
}

TEST(OpsMathUnary, UnsupportedDtypeNamesNode) {
  Tensor x = i64({4, 9});
  Node n("Sqrt", 1);
  expect_error_naming([&] { run1(n.node, {&x}); }, n.node, ErrorCode::kUnsupported, "int64");
}

// ---- reduced precision ---------------------------------------------------------------------------------------
TEST(OpsMathHalf, Float16AndBFloat16ComputeInFloat) {
  std::vector<float> v = {0.5f, -1.25f, 3.f, 65504.f, -0.f, 1024.f};
  Tensor h = f16(v, {6});
  Tensor back = run1(Node("Cast", 1).i("to", static_cast<int64_t>(DType::kFloat32)).node, {&h});
  EXPECT_EQ(back.dtype(), DType::kFloat32);
  expect_values(back, {0.5, -1.25, 3, 65504, 0, 1024}, 0);
  Tensor f = f32(v, {6});
  Tensor h2 = run1(Node("Cast", 1).i("to", static_cast<int64_t>(DType::kFloat16)).node, {&f});
  ASSERT_EQ(h2.dtype(), DType::kFloat16);
  EXPECT_EQ(std::memcmp(h2.raw(), h.raw(), h.nbytes()), 0);
  // Arithmetic stays in float16 storage; 65504 + 65504 overflows to inf like on a GPU.
  Tensor s = run1(Node("Add", 2).node, {&h, &h});
  EXPECT_EQ(s.dtype(), DType::kFloat16);
  expect_values(s, {1, -2.5, 6, kInf, 0, 2048}, 0);
  Tensor r = run1(Node("Relu", 1).node, {&h});
  expect_values(r, {0.5, 0, 3, 65504, 0, 1024}, 0);
  Tensor b = bf16({1.f, -2.f, 0.5f}, {3});
  Tensor sig = run1(Node("Sigmoid", 1).node, {&b});
  EXPECT_EQ(sig.dtype(), DType::kBFloat16);
  expect_values(sig, {1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(-0.5))}, 1e-2);
  Tensor bm = run1(Node("Mul", 2).node, {&b, &b});
  expect_values(bm, {1, 4, 0.25}, 0);
  Tensor d = f64({1e-300, 2}, {2});
  expect_values(run1(Node("Mul", 2).node, {&d, &d}), {0, 4}, 0);
}

// ---- Cast -------------------------------------------------------------------------------------------------
TEST(OpsMathCast, FloatToIntTruncatesAndBoolRules) {
  auto cast = [](const Tensor& x, DType to) {
    return run1(Node("Cast", 1).i("to", static_cast<int64_t>(to)).node, {&x});
  };
  Tensor x = f32({-1.7f, 2.9f, -0.2f, 0, kNaN, 1e30f});
  Tensor i = cast(x, DType::kInt64);
  EXPECT_EQ(ints_of(i), (std::vector<int64_t>{-1, 2, 0, 0, 0, std::numeric_limits<int64_t>::max()}));
  expect_values(cast(f32({-1.7f, 2.9f, -0.2f, 0}), DType::kInt32), {-1, 2, 0, 0});
  Tensor b = cast(f32({0, -0.f, 0.1f, kNaN, -3}), DType::kBool);
  EXPECT_EQ(b.dtype(), DType::kBool);
  expect_values(b, {0, 0, 1, 1, 1});
  expect_values(cast(boolean({1, 0, 1}, {3}), DType::kFloat32), {1, 0, 1});
  expect_values(cast(boolean({1, 0}, {2}), DType::kInt8), {1, 0});
  expect_values(cast(i64({300, -1, 127}), DType::kInt8), {44, -1, 127});
  expect_values(cast(i64({300, -1}), DType::kUInt8), {44, 255});
  expect_values(cast(i32({7, -7}, {2}), DType::kFloat64), {7, -7});
  expect_values(cast(i64({5, 0}), DType::kBool), {1, 0});
  expect_values(cast(f64({2.5, -2.5}, {2}), DType::kBFloat16), {2.5, -2.5});
  Tensor same = cast(x, DType::kFloat32);
  EXPECT_EQ(same.raw(), x.raw());  // a view, no copy
  Tensor like = f16({0}, {1});
  Tensor cl = run1(Node("CastLike", 2).node, {&x, &like});
  EXPECT_EQ(cl.dtype(), DType::kFloat16);
  Node bad("Cast", 1);
  bad.i("to", 8);  // STRING
  expect_error_naming([&] { run1(bad.node, {&x}); }, bad.node, ErrorCode::kUnsupported);
}

// ---- logic --------------------------------------------------------------------------------------------------
TEST(OpsMathLogic, ComparisonsBroadcastToBool) {
  Tensor a = f32({1, 2, 3}, {3, 1});
  Tensor b = f32({2, kNaN}, {1, 2});
  Tensor lt = run1(Node("Less", 2).node, {&a, &b});
  EXPECT_EQ(lt.dtype(), DType::kBool);
  EXPECT_EQ(lt.shape(), (Shape{3, 2}));
  expect_values(lt, {1, 0, 0, 0, 0, 0});
  expect_values(run1(Node("LessOrEqual", 2).node, {&a, &b}), {1, 0, 1, 0, 0, 0});
  expect_values(run1(Node("Greater", 2).node, {&a, &b}), {0, 0, 0, 0, 1, 0});
  expect_values(run1(Node("GreaterOrEqual", 2).node, {&a, &b}), {0, 0, 1, 0, 1, 0});
  expect_values(run1(Node("Equal", 2).node, {&a, &b}), {0, 0, 1, 0, 0, 0});
  Tensor ia = i64({-1, 5});
  Tensor ib = i64({5}, {});
  expect_values(run1(Node("Equal", 2).node, {&ia, &ib}), {0, 1});
  Tensor ba = boolean({1, 1, 0, 0}, {4});
  Tensor bb = boolean({1, 0, 1, 0}, {4});
  expect_values(run1(Node("And", 2).node, {&ba, &bb}), {1, 0, 0, 0});
  expect_values(run1(Node("Or", 2).node, {&ba, &bb}), {1, 1, 1, 0});
  expect_values(run1(Node("Xor", 2).node, {&ba, &bb}), {0, 1, 1, 0});
  expect_values(run1(Node("Not", 1).node, {&ba}), {0, 0, 1, 1});
  Node n("And", 2);
  expect_error_naming([&] { run1(n.node, {&a, &a}); }, n.node, ErrorCode::kInvalidModel, "bool");
}

TEST(OpsMathLogic, WhereBroadcastsAllThree) {
  Tensor c = boolean({1, 0, 1}, {1, 3});
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = f32({-1.f}, {});
  Tensor w = run1(Node("Where", 3).node, {&c, &x, &y});
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  expect_values(w, {1, -1, 3, 4, -1, 6});
  Tensor xi = i64({7}, {1});
  Tensor yi = i64({8, 9}, {2, 1});
  Tensor wi = run1(Node("Where", 3).node, {&c, &xi, &yi});
  EXPECT_EQ(wi.shape(), (Shape{2, 3}));
  expect_values(wi, {7, 8, 7, 7, 9, 7});
}

// ---- shape functions ------------------------------------------------------------------------------------------
TEST(OpsMathInfer, BroadcastKeepsSymbolicDims) {
  ir::TensorType a = ttype(DType::kFloat32, {sym("batch"), 1, 64});
  ir::TensorType b = ttype(DType::kFloat32, {7, 64});
  auto out = infer(Node("Add", 2).node, {&a, &b});
  EXPECT_EQ(ir::sym_shape_to_string(out[0].shape), "batchx7x64");
  auto cmp = infer(Node("Less", 2).node, {&a, &b});
  EXPECT_EQ(cmp[0].dtype, DType::kBool);
  ir::TensorType c = ttype(DType::kBool, {sym("batch"), 1, 1});
  auto w = infer(Node("Where", 3).node, {&c, &a, &b});
  EXPECT_EQ(w[0].dtype, DType::kFloat32);
  EXPECT_EQ(ir::sym_shape_to_string(w[0].shape), "batchx7x64");
  auto cast = infer(Node("Cast", 1).i("to", static_cast<int64_t>(DType::kFloat16)).node, {&a});
  EXPECT_EQ(cast[0].dtype, DType::kFloat16);
  EXPECT_EQ(cast[0].shape, a.shape);
}

TEST(OpsMathInfer, ScalarArithmeticOnShapeValues) {
  ir::TensorType batch = ttype(DType::kInt64, {});
  batch.sym_value = ir::SymShape{sym("batch")};
  ir::TensorType k = ttype(DType::kInt64, {});
  Tensor eight = i64_scalar(8);
  Tensor one = i64_scalar(1);
  auto mul = infer(Node("Mul", 2).node, {&batch, &k}, {nullptr, &eight});
  ASSERT_TRUE(mul[0].sym_value.has_value());
  EXPECT_EQ((*mul[0].sym_value)[0].param, "batch*8");
  // Products are canonical: 8*batch and batch*8 get the same name.
  auto swapped = infer(Node("Mul", 2).node, {&k, &batch}, {&eight, nullptr});
  EXPECT_EQ((*swapped[0].sym_value)[0].param, "batch*8");
  auto idm = infer(Node("Mul", 2).node, {&batch, &k}, {nullptr, &one});
  EXPECT_EQ((*idm[0].sym_value)[0].param, "batch");
  Tensor six = i64_scalar(6);
  Tensor three = i64_scalar(3);
  auto div = infer(Node("Div", 2).node, {&k, &k}, {&six, &three});
  EXPECT_EQ((*div[0].sym_value)[0].value, 2);
  // Cast between int types keeps values; to float it drops them.
  auto ci = infer(Node("Cast", 1).i("to", static_cast<int64_t>(DType::kInt32)).node, {&batch});
  ASSERT_TRUE(ci[0].sym_value.has_value());
  EXPECT_EQ((*ci[0].sym_value)[0].param, "batch");
  auto cf = infer(Node("Cast", 1).i("to", static_cast<int64_t>(DType::kFloat32)).node, {&batch});
  EXPECT_FALSE(cf[0].sym_value.has_value());
}

}  // namespace
}  // namespace kilnrt::ops::optest
