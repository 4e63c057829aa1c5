// CPU reference kernels for ops and dtypes that the newer onnx releases (1.23: opsets 18-28) test: signed BitShift,
// BitwiseAnd/Or/Xor/Not, Swish, CumProd, RMSNormalization, LpNormalization, bool ReduceMax/ReduceMin, Attention,
// BitCast, SwiGLU, RotaryEmbedding, LpPool, CenterCropPad, Col2Im, CausalConvWithState,
// LinearAttention, AffineGrid, TensorScatter, Resize half_pixel_symmetric
// and antialias, 16-bit and blocked QuantizeLinear / DequantizeLinear, the inverse real DFT,
// DeformConv, OptionalHasElement / OptionalGetElement on tensors, FlexAttention without graph attributes,
// float64 MatMul / Softmax.
// Expected values are worked out by hand from the ONNX operator definitions (the arithmetic is in the comments).
#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

Tensor i16(const std::vector<int16_t>& v, const Shape& s) { return Tensor::from_data(v.data(), DType::kInt16, s); }

// ---- BitShift on signed integers --------------------------------------------------------------------------------

TEST(OpsOnnx123, BitShiftSignedRightIsArithmetic) {
  Node n("BitShift", 2);
  n.s("direction", "RIGHT");
  // -8 >> 1 = -4, -1 >> 3 = -1 (sign bit fills), -128 >> 1 = -64, 16 >> 2 = 4.
  Tensor x = i8({-8, -1, -128, 16}, {4}), y = i8({1, 3, 1, 2}, {4});
  Tensor z = run1(n.node, {&x, &y}, 28);
  EXPECT_EQ(z.dtype(), DType::kInt8);
  expect_values(z, {-4, -1, -64, 4});
}

TEST(OpsOnnx123, BitShiftSignedLeftWrapsInTwosComplement) {
  Node n("BitShift", 2);
  n.s("direction", "LEFT");
  // int8: 64 << 1 = 128 -> -128; 1 << 7 = -128; -64 << 1 = -128; 3 << 2 = 12.
  Tensor x = i8({64, 1, -64, 3}, {4}), y = i8({1, 7, 1, 2}, {4});
  expect_values(run1(n.node, {&x, &y}, 28), {-128, -128, -128, 12});
  // int32: 1073741824 << 1 = 2^31 -> -2147483648.
  Tensor a = i32({1073741824, -5}, {2}), b = i32({1, 1}, {2});
  expect_values(run1(n.node, {&a, &b}, 28), {-2147483648.0, -10});
}

TEST(OpsOnnx123, BitShiftOutOfRangeGivesZeroOrMinusOne) {
  // Shifts >= the width or < 0: left -> 0; right -> -1 for negative x, else 0.
  Tensor x = i32({-8, 4, -1, 4}, {4}), y = i32({32, 33, -1, -64}, {4});
  Node r("BitShift", 2), l("BitShift", 2);
  r.s("direction", "RIGHT");
  l.s("direction", "LEFT");
  expect_values(run1(r.node, {&x, &y}, 28), {-1, 0, -1, 0});
  expect_values(run1(l.node, {&x, &y}, 28), {0, 0, 0, 0});
  // Unsigned keeps its meaning: 200 >> 8 = 0 (width 8), 200 >> 3 = 25.
  Tensor ux = u8({200, 200}, {2}), uy = u8({8, 3}, {2});
  expect_values(run1(r.node, {&ux, &uy}, 28), {0, 25});
  // Before opset 28 BitShift is unsigned only: a signed input is a clear error naming the node.
  expect_error_naming([&] { run1(r.node, {&x, &y}, 27); }, r.node, ErrorCode::kUnsupported, "opset 28");
}

// ---- Bitwise logic ------------------------------------------------------------------------------------------------

TEST(OpsOnnx123, BitwiseAndOrXorBroadcast) {
  // 12 = 0b1100, 10 = 0b1010: & = 8, | = 14, ^ = 6. -1 & 10 = 10, -1 | 10 = -1, -1 ^ 10 = -11.
  Tensor a = i16({12, -1}, {2, 1}), b = i16({10}, {1});
  Node band("BitwiseAnd", 2), bor("BitwiseOr", 2), bxor("BitwiseXor", 2);
  Tensor y = run1(band.node, {&a, &b}, 18);
  EXPECT_EQ(y.dtype(), DType::kInt16);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expect_values(y, {8, 10});
  expect_values(run1(bor.node, {&a, &b}, 18), {14, -1});
  expect_values(run1(bxor.node, {&a, &b}, 18), {6, -11});
}

TEST(OpsOnnx123, BitwiseNotAndFloatsRefused) {
  Node n("BitwiseNot", 1);
  Tensor x = i32({0, 5, -1}, {3}), u = u8({0, 5}, {2});
  expect_values(run1(n.node, {&x}, 18), {-1, -6, 0});
  expect_values(run1(n.node, {&u}, 18), {255, 250});
  Tensor f = f32({1.f});
  expect_error_naming([&] { run1(n.node, {&f}, 18); }, n.node, ErrorCode::kUnsupported);
}

// ---- Swish --------------------------------------------------------------------------------------------------------

TEST(OpsOnnx123, SwishWithAlpha) {
  Node n("Swish", 1);
  Tensor x = f32({-1.f, 0.f, 2.f});
  // alpha = 1: x / (1 + e^-x): -1/(1+e) = -0.268941, 0, 2/(1+e^-2) = 1.761594.
  expect_values(run1(n.node, {&x}, 24), {-0.2689414213699951, 0.0, 1.7615941559557649}, 1e-6);
  n.f("alpha", 0.5f);
  // alpha = 0.5: -1/(1+e^0.5) = -0.377541, 2/(1+e^-1) = 1.462117.
  expect_values(run1(n.node, {&x}, 24), {-0.3775406687981454, 0.0, 1.4621171572600098}, 1e-6);
}

// ---- CumProd ------------------------------------------------------------------------------------------------------

TEST(OpsOnnx123, CumProdModes) {
  Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor ax1 = i64_scalar(1), ax0 = i32({0}, {});
  Node n("CumProd", 2);
  expect_values(run1(n.node, {&x, &ax1}, 26), {1, 2, 6, 4, 20, 120});
  expect_values(run1(n.node, {&x, &ax0}, 26), {1, 2, 3, 4, 10, 18});
  Node ex("CumProd", 2), rev("CumProd", 2), both("CumProd", 2);
  ex.i("exclusive", 1);
  rev.i("reverse", 1);
  both.i("exclusive", 1).i("reverse", 1);
  expect_values(run1(ex.node, {&x, &ax1}, 26), {1, 1, 2, 1, 4, 20});
  expect_values(run1(rev.node, {&x, &ax1}, 26), {6, 6, 3, 120, 30, 6});
  expect_values(run1(both.node, {&x, &ax1}, 26), {6, 3, 1, 30, 6, 1});
  // Integers stay exact: int32 [2, -3, 4] -> [2, -6, -24].
  Tensor xi = i32({2, -3, 4}, {3}), a = i64_scalar(0);
  Tensor yi = run1(n.node, {&xi, &a}, 26);
  EXPECT_EQ(yi.dtype(), DType::kInt32);
  expect_values(yi, {2, -6, -24});
}

// ---- RMSNormalization / LpNormalization -------------------------------------------------------------------------

TEST(OpsOnnx123, RmsNormalizationOverTrailingAxes) {
  // Rows [3, 4] and [1, -1]: mean squares 12.5 and 1; epsilon 0 -> divide by sqrt(12.5) = 3.535534 and 1.
  Tensor x = f32({3.f, 4.f, 1.f, -1.f}, {2, 2}), scale = f32({1.f, 2.f});
  Node n("RMSNormalization", 2);
  n.f("epsilon", 0.f);
  expect_values(run1(n.node, {&x, &scale}, 23), {0.848528137, 2.262741700, 1.0, -2.0}, 1e-6);
  // axis 0 normalises over all 4 values: mean square (9 + 16 + 1 + 1) / 4 = 6.75, rms 2.598076; scale [2, 2] per
  // trailing shape {2, 2} broadcast from [1].
  Node all("RMSNormalization", 2);
  all.i("axis", 0).f("epsilon", 0.f);
  Tensor s1 = f32({2.f});
  expect_values(run1(all.node, {&x, &s1}, 23), {2.309401077, 3.079201436, 0.769800359, -0.769800359}, 1e-6);
  // epsilon is added to the mean square: [0, 0] with epsilon 1 stays 0, [2, 2] / sqrt(4 + 1) = 0.894427.
  Node eps("RMSNormalization", 2);
  eps.f("epsilon", 1.f);
  Tensor z = f32({0.f, 0.f, 2.f, 2.f}, {2, 2}), ones = f32({1.f, 1.f});
  expect_values(run1(eps.node, {&z, &ones}, 23), {0, 0, 0.894427191, 0.894427191}, 1e-6);
}

TEST(OpsOnnx123, LpNormalizationL1L2AndZeroNorm) {
  Tensor x = f32({3.f, -4.f, 0.f, 0.f}, {2, 2});
  Node l2("LpNormalization", 1), l1("LpNormalization", 1);
  l1.i("p", 1);
  // Rows: [3, -4] L2 norm 5 -> [0.6, -0.8]; L1 norm 7 -> [3/7, -4/7]; the zero row stays 0 (not NaN).
  expect_values(run1(l2.node, {&x}, 22), {0.6, -0.8, 0, 0});
  expect_values(run1(l1.node, {&x}, 22), {3.0 / 7, -4.0 / 7, 0, 0});
  // axis 0: columns [3, 0] and [-4, 0] -> [1, -1, 0, 0].
  Node col("LpNormalization", 1);
  col.i("axis", 0);
  expect_values(run1(col.node, {&x}, 22), {1, -1, 0, 0});
  Node bad("LpNormalization", 1);
  bad.i("p", 3);
  expect_error_naming([&] { run1(bad.node, {&x}, 22); }, bad.node, ErrorCode::kInvalidModel, "p must be 1 or 2");
}

// ---- bool ReduceMax / ReduceMin -------------------------------------------------------------------------------------

TEST(OpsOnnx123, ReduceMaxMinOnBool) {
  Tensor x = boolean({1, 0, 0, 0, 1, 1}, {3, 2});
  Tensor axes = i64({1});
  Node mx("ReduceMax", 2), mn("ReduceMin", 2);
  mx.i("keepdims", 0);
  mn.i("keepdims", 0);
  Tensor y = run1(mx.node, {&x, &axes}, 20);
  EXPECT_EQ(y.dtype(), DType::kBool);
  expect_values(y, {1, 0, 1});                               // any
  expect_values(run1(mn.node, {&x, &axes}, 20), {0, 0, 1});  // all
  // Empty reduced axis: max -> false, min -> true.
  Tensor e = Tensor::empty(DType::kBool, {2, 0});
  expect_values(run1(mx.node, {&e, &axes}, 20), {0, 0});
  expect_values(run1(mn.node, {&e, &axes}, 20), {1, 1});
}

// ---- Attention (opset 23+) ----------------------------------------------------------------------------------------
// One query row against keys [0, ln 3] (head size 1, default scale 1): scores [0, ln 3] -> softmax [1/4, 3/4];
// with V = [2, 6]: Y = 2/4 + 6*3/4 = 5. A query of 2 doubles the scores: [1/10, 9/10] -> Y = 0.2 + 5.4 = 5.6.
constexpr double kLn3 = 1.0986122886681098;

TEST(OpsOnnx123, AttentionCausalAndProbabilitiesOutput) {
  Tensor q = f32({1.f, 1.f}, {1, 1, 2, 1}), k = f32({0.f, static_cast<float>(kLn3)}, {1, 1, 2, 1});
  Tensor v = f32({2.f, 6.f}, {1, 1, 2, 1});
  Node plain("Attention", 3, 4);
  plain.omit_output(1).omit_output(2).i("qk_matmul_output_mode", 3);
  std::vector<Tensor> out = run(plain.node, {&q, &k, &v}, 23);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 1}));
  expect_values(out[0], {5, 5}, 1e-6);
  expect_values(out[3], {0.25, 0.75, 0.25, 0.75}, 1e-6);
  // Causal: query 0 sees key 0 only (Y = 2), query 1 both (Y = 5).
  Node causal("Attention", 3, 4);
  causal.omit_output(1).omit_output(2).i("qk_matmul_output_mode", 3).i("is_causal", 1);
  out = run(causal.node, {&q, &k, &v}, 23);
  expect_values(out[0], {2, 5}, 1e-6);
  expect_values(out[3], {1, 0, 0.25, 0.75}, 1e-6);
  // Mode 0: the scaled scores before any mask.
  Node raw("Attention", 3, 4);
  raw.omit_output(1).omit_output(2).i("is_causal", 1).f("scale", 2.f);
  expect_values(run(raw.node, {&q, &k, &v}, 23)[3], {0, 2 * kLn3, 0, 2 * kLn3}, 1e-6);
}

TEST(OpsOnnx123, AttentionBoolMaskFullyMaskedRowIsZero) {
  Tensor q = f32({1.f, 1.f}, {1, 1, 2, 1}), k = f32({0.f, static_cast<float>(kLn3)}, {1, 1, 2, 1});
  Tensor v = f32({2.f, 6.f}, {1, 1, 2, 1});
  Tensor mask = boolean({0, 0, 1, 1}, {2, 2});  // row 0 attends nothing
  Node n("Attention", 4, 4);
  n.omit_output(1).omit_output(2).i("qk_matmul_output_mode", 3);
  std::vector<Tensor> out = run(n.node, {&q, &k, &v, &mask}, 23);
  expect_values(out[0], {0, 5}, 1e-6);
  expect_values(out[3], {0, 0, 0.25, 0.75}, 1e-6);
  // A float mask is added: -ln 3 on key 1 makes the scores equal -> Y = (2 + 6) / 2 = 4.
  Tensor fmask = f32({0.f, -static_cast<float>(kLn3)}, {2});
  Node f("Attention", 4, 1);
  expect_values(run1(f.node, {&q, &k, &v, &fmask}, 23), {4, 4}, 1e-6);
}

TEST(OpsOnnx123, AttentionGroupedQueryIn3DLayout) {
  // 3-D [B, S, heads * D] with q_num_heads 2 sharing kv head 0; head 1's query is 2.
  Tensor q = f32({1.f, 2.f, 1.f, 2.f}, {1, 2, 2}), k = f32({0.f, static_cast<float>(kLn3)}, {1, 2, 1});
  Tensor v = f32({2.f, 6.f}, {1, 2, 1});
  Node n("Attention", 3, 1);
  n.i("q_num_heads", 2).i("kv_num_heads", 1);
  Tensor y = run1(n.node, {&q, &k, &v}, 23);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2}));
  expect_values(y, {5, 5.6, 5, 5.6}, 1e-6);
  const ir::TensorType tq = ttype(DType::kFloat32, {1, 2, 2}), tkv = ttype(DType::kFloat32, {1, 2, 1});
  auto types = infer(n.node, {&tq, &tkv, &tkv}, {}, 23);
  EXPECT_EQ(sym_shape_to_shape(types[0].shape), (Shape{1, 2, 2}));
}

TEST(OpsOnnx123, AttentionPastCacheAndSoftcap) {
  // past key 0 / value 2 plus the new key ln 3 / value 6: present = concatenation; causal offset 1 lets the one
  // query see both keys -> Y = 5.
  Tensor q = f32({1.f}, {1, 1, 1, 1}), k = f32({static_cast<float>(kLn3)}, {1, 1, 1, 1}), v = f32({6.f}, {1, 1, 1, 1});
  Tensor pk = f32({0.f}, {1, 1, 1, 1}), pv = f32({2.f}, {1, 1, 1, 1});
  Node n("Attention", 6, 3);
  n.i("is_causal", 1);
  std::vector<Tensor> out = run(n.node, {&q, &k, &v, nullptr, &pk, &pv}, 23);
  expect_values(out[0], {5}, 1e-6);
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 1}));
  expect_values(out[1], {0, kLn3}, 1e-6);
  expect_values(out[2], {2, 6}, 1e-6);
  // softcap 1: scores tanh(0) = 0 and tanh(ln 3) = 0.8 -> p = e^0.8 / (1 + e^0.8) = 0.689974; Y = 2(1-p) + 6p.
  Node sc("Attention", 6, 1);
  sc.f("softcap", 1.f);
  expect_values(run1(sc.node, {&q, &k, &v, nullptr, &pk, &pv}, 23), {4.759897924510449}, 1e-6);
  // Mismatched heads are a clear error naming the node.
  Tensor k2 = f32({0.f, 0.f, 0.f}, {1, 3, 1, 1}), v2 = f32({0.f, 0.f, 0.f}, {1, 3, 1, 1});
  Tensor q2 = f32({0.f, 0.f}, {1, 2, 1, 1});
  Node bad("Attention", 3, 1);
  expect_error_naming([&] { run1(bad.node, {&q2, &k2, &v2}, 23); }, bad.node, ErrorCode::kInvalidModel);
}

// ---- BitCast / SwiGLU / RotaryEmbedding --------------------------------------------------------------------------

TEST(OpsOnnx123, BitCastKeepsTheBytes) {
  Node n("BitCast", 1);
  n.i("to", 6);  // int32
  // IEEE 754: 1.0f = 0x3F800000 = 1065353216, -2.0f = 0xC0000000 = -1073741824.
  Tensor x = f32({1.f, -2.f}, {2, 1});
  Tensor y = run1(n.node, {&x}, 26);
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expect_values(y, {1065353216.0, -1073741824.0});
  Node u("BitCast", 1);
  u.i("to", 2);  // uint8
  Tensor i = i8({-1, 5}, {2});
  expect_values(run1(u.node, {&i}, 26), {255, 5});
  Node wide("BitCast", 1);
  wide.i("to", 7);  // int64: another width
  expect_error_naming([&] { run1(wide.node, {&x}, 26); }, wide.node, ErrorCode::kInvalidModel, "same width");
}

TEST(OpsOnnx123, SwiGluGatesB) {
  // a * sigmoid(a) * b: 0 * 0.5 * 3 = 0; 1 * 0.731059 * 2 = 1.462117. alpha 2: 1 * sigmoid(2) * 2 = 1.761594.
  Tensor a = f32({0.f, 1.f}), b = f32({3.f, 2.f});
  Node n("SwiGLU", 2);
  expect_values(run1(n.node, {&a, &b}, 28), {0, 1.4621171572600098}, 1e-6);
  n.f("alpha", 2.f);
  expect_values(run1(n.node, {&a, &b}, 28), {0, 1.7615941559557649}, 1e-6);
  Tensor c = f32({1.f, 2.f, 3.f});
  expect_error_naming([&] { run1(n.node, {&a, &c}, 28); }, n.node, ErrorCode::kInvalidModel, "same shape");
}

TEST(OpsOnnx123, RotaryEmbeddingHalvesInterleavedAndPositions) {
  // Angles 90 degrees (cos 0, sin 1) for pair 0 and 0 degrees for pair 1.
  Tensor x = f32({1.f, 2.f, 3.f, 4.f}, {1, 1, 1, 4});
  Tensor cs = f32({0.f, 1.f}, {1, 1, 2}), sn = f32({1.f, 0.f}, {1, 1, 2});
  Node halves("RotaryEmbedding", 3);
  // Pairs (x0, x2) = (1, 3) -> (0*1 - 1*3, 1*1 + 0*3) = (-3, 1); (x1, x3) unchanged.
  expect_values(run1(halves.node, {&x, &cs, &sn}, 23), {-3, 2, 1, 4});
  Node inter("RotaryEmbedding", 3);
  inter.i("interleaved", 1);
  // Pairs (x0, x1) = (1, 2) -> (-2, 1); (x2, x3) unchanged.
  expect_values(run1(inter.node, {&x, &cs, &sn}, 23), {-2, 1, 3, 4});
  // 3-D input with num_heads 1, head 3, rotary dim 2 (x2 copied); caches [2 positions, 1] read at position_ids
  // [[1, 0]]: position 1 = 90 degrees, position 0 = identity.
  Tensor x3 = f32({1.f, 2.f, 5.f, 3.f, 4.f, 6.f}, {1, 2, 3});
  Tensor c2 = f32({1.f, 0.f}, {2, 1}), s2 = f32({0.f, 1.f}, {2, 1});
  Tensor pos = i64({1, 0}, {1, 2});
  Node p("RotaryEmbedding", 4);
  p.i("num_heads", 1).i("rotary_embedding_dim", 2);
  expect_values(run1(p.node, {&x3, &c2, &s2, &pos}, 23), {-2, 1, 5, 3, 4, 6});
  Tensor far = i64({2, 0}, {1, 2});
  expect_error_naming(
      [&] {
        run1(p.node, {&x3, &c2, &s2, &far}, 23);
      },
      p.node, ErrorCode::kInvalidArgument, "outside the cache");
}

// ---- LpPool / CenterCropPad / Col2Im -----------------------------------------------------------------------------

TEST(OpsOnnx123, LpPoolP2P1AndPads) {
  Tensor x = f32({3.f, -4.f, 0.f}, {1, 1, 1, 3});
  Node l2("LpPool", 1);
  l2.ints("kernel_shape", {1, 2});
  // Windows (3, -4) and (-4, 0): sqrt(9 + 16) = 5, 4.
  Tensor y = run1(l2.node, {&x}, 22);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  expect_values(y, {5, 4});
  Node l1("LpPool", 1);
  l1.ints("kernel_shape", {1, 2}).i("p", 1);
  expect_values(run1(l1.node, {&x}, 22), {7, 4});
  // Pads 1 on both sides of W: windows (pad, 3), (3, -4), (-4, 0), (0, pad) -> 3, 5, 4, 0.
  Node padded("LpPool", 1);
  padded.ints("kernel_shape", {1, 2}).ints("pads", {0, 1, 0, 1});
  expect_values(run1(padded.node, {&x}, 22), {3, 5, 4, 0});
}

TEST(OpsOnnx123, CenterCropPadCropsAndPadsAroundTheCentre) {
  std::vector<float> v;
  for (int i = 0; i < 12; ++i) v.push_back(static_cast<float>(i));
  Tensor x = f32(v, {3, 4});
  // Rows 3 -> 2: start (3 - 2) / 2 = 0; columns 4 -> 6: the input starts at (6 - 4) / 2 = 1.
  Tensor shape = i64({2, 6});
  Node n("CenterCropPad", 2);
  Tensor y = run1(n.node, {&x, &shape}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  expect_values(y, {0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0});
  // axes [1] only, 4 -> 2: columns 1 and 2.
  Node cols("CenterCropPad", 2);
  cols.ints("axes", {-1});
  Tensor two = i64({2});
  expect_values(run1(cols.node, {&x, &two}, 18), {1, 2, 5, 6, 9, 10});
  Tensor three = i64({2, 2, 2});
  expect_error_naming([&] { run1(n.node, {&x, &three}, 18); }, n.node, ErrorCode::kInvalidModel, "3 values");
}

TEST(OpsOnnx123, Col2ImSumsOverlappingBlocks) {
  // 1-D image of 3, blocks of 2, stride 1: 2 block positions. Column row k = tap k of each block:
  // tap 0 of blocks 0, 1 -> positions 0, 1; tap 1 -> positions 1, 2. image = [1, 2 + 10, 20].
  Tensor x = f32({1.f, 2.f, 10.f, 20.f}, {1, 2, 2});
  Tensor image = i64({3}), block = i64({2});
  Node n("Col2Im", 3);
  Tensor y = run1(n.node, {&x, &image, &block}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  expect_values(y, {1, 12, 20});
  // pads 1 and 1: 4 block positions starting at -1; the taps landing at -1 and 3 are dropped.
  // tap 0 at positions -1, 0, 1, 2 (values 1, 2, 3, 4); tap 1 at 0, 1, 2, 3 (values 5, 6, 7, 8).
  Tensor xp = f32({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, {1, 2, 4});
  Node pad("Col2Im", 3);
  pad.ints("pads", {1, 1});
  expect_values(run1(pad.node, {&xp, &image, &block}, 18), {2 + 5, 3 + 6, 4 + 7});
  Tensor wrong = f32({1.f, 2.f, 3.f}, {1, 1, 3});
  expect_error_naming([&] { run1(n.node, {&wrong, &image, &block}, 18); }, n.node, ErrorCode::kInvalidModel);
}

// ---- CausalConvWithState
// ---------------------------------------------------------------------------------------------

TEST(OpsOnnx123, CausalConvWithStateCarriesTheState) {
  // padded = [0, 1, 2, 3] (zero state of K-1 = 1); y[t] = 1 * p[t] + 10 * p[t+1] = 10, 21, 32; present = [3].
  Tensor x = f32({1.f, 2.f, 3.f}, {1, 1, 3}), w = f32({1.f, 10.f}, {1, 1, 2});
  Node n("CausalConvWithState", 2, 2);
  std::vector<Tensor> out = run(n.node, {&x, &w}, 27);
  expect_values(out[0], {10, 21, 32});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 1}));
  expect_values(out[1], {3});
  // past_state [5] and bias 1: padded [5, 1, 2, 3] -> 5 + 10 + 1 = 16, 22, 33.
  Tensor past = f32({5.f}, {1, 1, 1}), bias = f32({1.f});
  Node b("CausalConvWithState", 4, 2);
  expect_values(run(b.node, {&x, &w, &bias, &past}, 27)[0], {16, 22, 33});
  // K = 1, silu: y = 1 * sigmoid(1) = 0.731059; the state is empty.
  Tensor one = f32({1.f}, {1, 1, 1});
  Node silu("CausalConvWithState", 2, 2);
  silu.s("activation", "silu");
  out = run(silu.node, {&one, &one}, 27);
  expect_values(out[0], {0.7310585786300049}, 1e-6);
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 0}));
  Tensor bad_past = f32({5.f, 6.f}, {1, 1, 2});
  expect_error_naming(
      [&] {
        run(b.node, {&x, &w, &bias, &bad_past}, 27);
      },
      b.node, ErrorCode::kInvalidModel, "past_state");
}

// ---- LinearAttention -----------------------------------------------------------------------------------------------
// d_k = d_v = 1, one kv head, keys [1, 2], values [3, 4], queries 1 (scale 1/sqrt(1) = 1).

TEST(OpsOnnx123, LinearAttentionUpdateRules) {
  Tensor q = f32({1.f, 1.f}, {1, 2, 1}), k = f32({1.f, 2.f}, {1, 2, 1}), v = f32({3.f, 4.f}, {1, 2, 1});
  // linear: S = 1*3 = 3 -> y 3; S = 3 + 2*4 = 11 -> y 11.
  Node lin("LinearAttention", 3, 2);
  lin.i("q_num_heads", 1).i("kv_num_heads", 1).s("update_rule", "linear");
  std::vector<Tensor> out = run(lin.node, {&q, &k, &v}, 27);
  expect_values(out[0], {3, 11}, 1e-6);
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 1, 1}));
  expect_values(out[1], {11}, 1e-6);
  // gated, decay [0, ln 0.5]: S = 3; S = 3 * 0.5 + 8 = 9.5.
  Tensor decay = f32({0.f, static_cast<float>(std::log(0.5))}, {1, 2, 1});
  Node gated("LinearAttention", 5, 1);
  gated.i("q_num_heads", 1).i("kv_num_heads", 1).s("update_rule", "gated");
  expect_values(run1(gated.node, {&q, &k, &v, nullptr, &decay}, 27), {3, 9.5}, 1e-6);
  // delta, beta 1: S = 3; then v' = 4 - S*k = 4 - 6 = -2, S = 3 + 2 * -2 = -1.
  Tensor beta = f32({1.f, 1.f}, {1, 2, 1});
  Node delta("LinearAttention", 6, 1);
  delta.i("q_num_heads", 1).i("kv_num_heads", 1).s("update_rule", "delta");
  expect_values(run1(delta.node, {&q, &k, &v, nullptr, nullptr, &beta}, 27), {3, -1}, 1e-6);
  // The rule decides which inputs are required: gated without decay is a clear error.
  expect_error_naming([&] { run1(gated.node, {&q, &k, &v}, 27); }, gated.node, ErrorCode::kInvalidModel, "decay");
}

TEST(OpsOnnx123, LinearAttentionGroupedQueryAndPastState) {
  // Two query heads [1, 2] read the one kv head: y = [S, 2S] with S = 3 then 11.
  Tensor q = f32({1.f, 2.f, 1.f, 2.f}, {1, 2, 2}), k = f32({1.f, 2.f}, {1, 2, 1}), v = f32({3.f, 4.f}, {1, 2, 1});
  Node n("LinearAttention", 3, 1);
  n.i("q_num_heads", 2).i("kv_num_heads", 1).s("update_rule", "linear");
  expect_values(run1(n.node, {&q, &k, &v}, 27), {3, 6, 11, 22}, 1e-6);
  // past_state 10 starts the sum: 13 then 21 (query head 0).
  Tensor q1 = f32({1.f, 1.f}, {1, 2, 1}), past = f32({10.f}, {1, 1, 1, 1});
  Node p("LinearAttention", 4, 1);
  p.i("q_num_heads", 1).i("kv_num_heads", 1).s("update_rule", "linear");
  expect_values(run1(p.node, {&q1, &k, &v, &past}, 27), {13, 21}, 1e-6);
}

// ---- AffineGrid / TensorScatter
// --------------------------------------------------------------------------------------

TEST(OpsOnnx123, AffineGrid2DAnd3D) {
  // Identity theta, 2x2 grid, align_corners 0: coordinates -1 + (2i + 1)/2 = -0.5, 0.5; points are (x, y).
  Tensor theta = f32({1.f, 0.f, 0.f, 0.f, 1.f, 0.f}, {1, 2, 3});
  Tensor size = i64({1, 1, 2, 2});
  Node n("AffineGrid", 2);
  Tensor g = run1(n.node, {&theta, &size}, 20);
  EXPECT_EQ(g.shape(), (Shape{1, 2, 2, 2}));
  expect_values(g, {-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5});
  // align_corners 1: coordinates -1, 1; theta maps x -> 2x + 1 (-1, 3), y -> y.
  Tensor t2 = f32({2.f, 0.f, 1.f, 0.f, 1.f, 0.f}, {1, 2, 3});
  Node ac("AffineGrid", 2);
  ac.i("align_corners", 1);
  expect_values(run1(ac.node, {&t2, &size}, 20), {-1, -1, 3, -1, -1, 1, 3, 1});
  // 3-D identity, D = H = 1, W = 2: (x, y, z) = (-0.5, 0, 0), (0.5, 0, 0).
  Tensor t3 = f32({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {1, 3, 4});
  Tensor size3 = i64({1, 1, 1, 1, 2});
  Tensor g3 = run1(n.node, {&t3, &size3}, 20);
  EXPECT_EQ(g3.shape(), (Shape{1, 1, 1, 2, 3}));
  expect_values(g3, {-0.5, 0, 0, 0.5, 0, 0});
  expect_error_naming([&] { run1(n.node, {&t3, &size}, 20); }, n.node, ErrorCode::kInvalidModel, "theta");
}

TEST(OpsOnnx123, TensorScatterLinearAndCircular) {
  Tensor cache = f32({0, 0, 0, 0, 0, 0}, {2, 3, 1}), update = f32({1, 2, 3, 4}, {2, 2, 1});
  // Batch 0 writes at 1, 2; batch 1 at 0, 1.
  Tensor idx = i64({1, 0});
  Node n("TensorScatter", 3);
  expect_values(run1(n.node, {&cache, &update, &idx}, 24), {0, 1, 2, 3, 4, 0});
  // Circular: batch 0 starts at 2 and wraps to 0.
  Tensor idx2 = i64({2, 0});
  Node c("TensorScatter", 3);
  c.s("mode", "circular");
  expect_values(run1(c.node, {&cache, &update, &idx2}, 24), {2, 0, 1, 3, 4, 0});
  // Linear past the end is a clear error; without write_indices the writes start at 0.
  expect_error_naming(
      [&] {
        run1(n.node, {&cache, &update, &idx2}, 24);
      },
      n.node, ErrorCode::kInvalidArgument, "outside the cache");
  expect_values(run1(n.node, {&cache, &update}, 24), {1, 2, 0, 3, 4, 0});
}

// ---- Resize half_pixel_symmetric -----------------------------------------------------------------------------------

TEST(OpsOnnx123, ResizeHalfPixelSymmetricUsesTheIntegerOutputLength) {
  // W 4 -> scale 0.6: output floor(2.4) = 2; adjustment 2 / 2.4, offset = 2 * (1 - 2/2.4) = 1/3;
  // x_in = 1/3 + (x + 0.5) / 0.6 - 0.5 = 2/3 and 7/3 -> linear over [1, 2, 3, 4]: 5/3, 10/3.
  Tensor x = f32({1.f, 2.f, 3.f, 4.f}, {1, 1, 1, 4});
  Tensor scales = f32({1.f, 1.f, 1.f, 0.6f});
  Node n("Resize", 3);
  n.s("mode", "linear").s("coordinate_transformation_mode", "half_pixel_symmetric");
  Tensor y = run1(n.node, {&x, nullptr, &scales}, 19);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  expect_values(y, {5.0 / 3, 10.0 / 3}, 1e-5);
}

TEST(OpsOnnx123, ResizeAntialiasLinearWidensTheFilter) {
  // W 4 -> 2 (scale 0.5), half_pixel: x_in = 0.5 and 2.5. The triangle filter stretched by 2 covers pixels
  // x - 1.5 .. x + 1.5 with weights 0.25, 0.75, 0.75, 0.25 (sum 2); reads past the edge take the edge pixel:
  // (0.25*1 + 0.75*1 + 0.75*2 + 0.25*3) / 2 = 1.625; (0.25*2 + 0.75*3 + 0.75*4 + 0.25*4) / 2 = 3.375.
  Tensor x = f32({1.f, 2.f, 3.f, 4.f}, {1, 1, 1, 4});
  Tensor scales = f32({1.f, 1.f, 1.f, 0.5f});
  Node n("Resize", 3);
  n.s("mode", "linear").i("antialias", 1);
  expect_values(run1(n.node, {&x, nullptr, &scales}, 18), {1.625, 3.375}, 1e-6);
  // exclude_outside drops the taps past the edge and renormalises: 3 / 1.75, 5.75 / 1.75.
  Node ex("Resize", 3);
  ex.s("mode", "linear").i("antialias", 1).i("exclude_outside", 1);
  expect_values(run1(ex.node, {&x, nullptr, &scales}, 18), {3 / 1.75, 5.75 / 1.75}, 1e-6);
  Node nearest("Resize", 3);
  nearest.i("antialias", 1);
  expect_error_naming(
      [&] {
        run1(nearest.node, {&x, nullptr, &scales}, 18);
      },
      nearest.node, ErrorCode::kUnsupported, "antialias");
}

// ---- QuantizeLinear / DequantizeLinear: 16-bit outputs, blocked parameters ----------------------------------------

TEST(OpsOnnx123, QuantizeLinearSixteenBitSaturates) {
  // int16, scale 0.5, zero point 0: 1.5 / 0.5 = 3; -70000 / 0.5 saturates at -32768.
  Tensor x = f32({1.5f, -70000.f}), scale = f32({0.5f}, {});
  Tensor zp16 = i16({0}, {});
  Node n("QuantizeLinear", 3);
  Tensor y = run1(n.node, {&x, &scale, &zp16}, 21);
  EXPECT_EQ(y.dtype(), DType::kInt16);
  expect_values(y, {3, -32768});
  // uint16 via output_dtype (no zero point): -5 -> 0, 40000 / 0.5 = 80000 -> 65535.
  Tensor x2 = f32({-5.f, 40000.f});
  Node u("QuantizeLinear", 2);
  u.i("output_dtype", 4);
  Tensor yu = run1(u.node, {&x2, &scale}, 21);
  EXPECT_EQ(yu.dtype(), DType::kUInt16);
  expect_values(yu, {0, 65535});
}

TEST(OpsOnnx123, BlockedQuantizeAndDequantize) {
  // X [2, 4], axis 1, block_size 2: scale [2, 2] = [[1, 2], [4, 8]] covers columns {0, 1} and {2, 3}.
  // Row 0: 1/1, 2/1, 4/2 + 1, 6/2 + 1 (zero point 1 on the second block) = 1, 2, 3, 4; row 1: 1, 2, 2, 3.
  Tensor x = f32({1, 2, 4, 6, 4, 8, 16, 24}, {2, 4});
  Tensor scale = f32({1, 2, 4, 8}, {2, 2});
  Tensor zp = i8({0, 1, 0, 0}, {2, 2});
  Node q("QuantizeLinear", 3);
  q.i("axis", 1).i("block_size", 2);
  Tensor y = run1(q.node, {&x, &scale, &zp}, 21);
  EXPECT_EQ(y.dtype(), DType::kInt8);
  expect_values(y, {1, 2, 3, 4, 1, 2, 2, 3});
  Node dq("DequantizeLinear", 3);
  dq.i("axis", 1).i("block_size", 2);
  expect_values(run1(dq.node, {&y, &scale, &zp}, 21), {1, 2, 4, 6, 4, 8, 16, 24});
  // A scale with the wrong number of blocks is a clear error.
  Tensor bad = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error_naming(
      [&] {
        run1(q.node, {&x, &bad, nullptr}, 21);
      },
      q.node, ErrorCode::kInvalidArgument, "block_size");
}

// ---- DFT: inverse + onesided (inverse real FFT) ------------------------------------------------------------------

TEST(OpsOnnx123, DftInverseOnesidedIsTheInverseRealFft) {
  // fft([1, 2, 3, 4]) = [10, -2+2i, -2, -2-2i]; its one-sided half [10, -2+2i, -2] gives back the real signal.
  Tensor x = f32({10.f, 0.f, -2.f, 2.f, -2.f, 0.f}, {1, 3, 2});
  Node n("DFT", 1);
  n.i("inverse", 1).i("onesided", 1).i("axis", 1);
  Tensor y = run1(n.node, {&x}, 17);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 1}));
  expect_values(y, {1, 2, 3, 4}, 1e-6);
  const ir::TensorType tx = ttype(DType::kFloat32, {1, 3, 2});
  EXPECT_EQ(sym_shape_to_shape(infer(n.node, {&tx}, {}, 17)[0].shape), (Shape{1, 4, 1}));
  // dft_length 5 (odd): bins 0..2 mirror to 4, 3; ifft of [10, -2+2i, -2, -2, -2-2i] real part at t = 0:
  // (10 - 2 - 2 - 2 - 2) / 5 = 0.4.
  Tensor len5 = i64_scalar(5);
  Node m("DFT", 2);
  m.i("inverse", 1).i("onesided", 1).i("axis", 1);
  Tensor y5 = run1(m.node, {&x, &len5}, 17);
  EXPECT_EQ(y5.shape(), (Shape{1, 5, 1}));
  EXPECT_NEAR(values(y5)[0], 0.4, 1e-6);
}

// ---- DeformConv ----------------------------------------------------------------------------------------------------

TEST(OpsOnnx123, DeformConvSamplesAtOffsetTaps) {
  // 1x1 kernel of weight 1 on X = [[1, 2], [3, 4]]: zero offsets give X back (+ bias 10).
  Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2}), w = f32({1}, {1, 1, 1, 1}), b = f32({10});
  Tensor zero = f32(std::vector<float>(8, 0.f), {1, 2, 2, 2});
  Node n("DeformConv", 4);
  expect_values(run1(n.node, {&x, &w, &zero, &b}, 19), {11, 12, 13, 14});
  // dw = 0.5 everywhere: samples at (i, j + 0.5): 1.5, (2 + 0 outside) / 2 = 1, 3.5, 2; mask 0.5 halves them.
  Tensor shift = f32({0, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f}, {1, 2, 2, 2});
  Tensor mask = f32({0.5f, 0.5f, 0.5f, 0.5f}, {1, 1, 2, 2});
  Node m("DeformConv", 5);
  expect_values(run1(m.node, {&x, &w, &shift, nullptr, &mask}, 19), {0.75, 0.5, 1.75, 1.0});
  Tensor bad = f32(std::vector<float>(4, 0.f), {1, 1, 2, 2});
  expect_error_naming([&] { run1(n.node, {&x, &w, &bad}, 19); }, n.node, ErrorCode::kInvalidModel, "offset");
}

// ---- OptionalHasElement / OptionalGetElement on tensors ----------------------------------------------------------

TEST(OpsOnnx123, OptionalOpsOnPlainTensors) {
  Tensor x = f32({1.f, 2.f});
  Node has("OptionalHasElement", 1);
  Tensor y = run1(has.node, {&x}, 18);
  EXPECT_EQ(y.dtype(), DType::kBool);
  EXPECT_EQ(y.shape(), Shape{});
  expect_values(y, {1});
  expect_values(run1(has.node, {nullptr}, 18), {0});  // omitted input: an empty optional
  Node none("OptionalHasElement", 0);
  expect_values(run1(none.node, {}, 18), {0});
  Node get("OptionalGetElement", 1);
  expect_values(run1(get.node, {&x}, 18), {1, 2});
  expect_error_naming([&] { run1(get.node, {nullptr}, 18); }, get.node, ErrorCode::kInvalidArgument, "empty optional");
}

// ---- FlexAttention (ai.onnx.preview) without graph attributes -----------------------------------------------------

TEST(OpsOnnx123, FlexAttentionPlainAndGrouped) {
  // Same numbers as the Attention tests: keys [0, ln 3], values [2, 6]: query 1 -> 5, query 2 -> 5.6.
  Tensor q = f32({1.f, 2.f}, {1, 2, 1, 1}), k = f32({0.f, static_cast<float>(kLn3)}, {1, 1, 2, 1});
  Tensor v = f32({2.f, 6.f}, {1, 1, 2, 1});
  Node n("FlexAttention", 3);
  n.node.domain = "ai.onnx.preview";
  Tensor y = run1(n.node, {&q, &k, &v}, 1);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 1}));
  expect_values(y, {5, 5.6}, 1e-6);
  // float64 runs in double too.
  Tensor qd = f64({1.0}, {1, 1, 1, 1}), kd = f64({0.0, kLn3}, {1, 1, 2, 1}), vd = f64({2.0, 6.0}, {1, 1, 2, 1});
  Tensor yd = run1(n.node, {&qd, &kd, &vd}, 1);
  EXPECT_EQ(yd.dtype(), DType::kFloat64);
  expect_values(yd, {5}, 1e-12);
  // A score_mod subgraph is refused clearly.
  Node mod("FlexAttention", 3);
  mod.node.domain = "ai.onnx.preview";
  ir::Attribute g;
  g.kind = ir::Attribute::Kind::kGraph;
  mod.attr("score_mod", g);
  expect_error_naming([&] { run1(mod.node, {&q, &k, &v}, 1); }, mod.node, ErrorCode::kUnsupported, "score_mod");
}

// ---- float64 MatMul / Softmax (the expanded function bodies of Attention / FlexAttention run them) -----------------

TEST(OpsOnnx123, MatMulAndSoftmaxInFloat64) {
  // [[1, 2], [3, 4]] @ [[5], [6]] = [[17], [39]], broadcast over a batch of 2 of A.
  Tensor a = f64({1, 2, 3, 4, 1, 0, 0, 1}, {2, 2, 2}), b = f64({5, 6}, {2, 1});
  Node mm("MatMul", 2);
  Tensor y = run1(mm.node, {&a, &b}, 13);
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 1}));
  expect_values(y, {17, 39, 5, 6}, 1e-15);
  // softmax([0, ln 3]) = [1/4, 3/4]; log-softmax = [ln 1/4, ln 3/4]. Axis 0 of [[0], [ln 3]] gives the same.
  Tensor x = f64({0.0, kLn3}, {1, 2});
  Node sm("Softmax", 1), lsm("LogSoftmax", 1), col("Softmax", 1);
  expect_values(run1(sm.node, {&x}, 13), {0.25, 0.75}, 1e-15);
  expect_values(run1(lsm.node, {&x}, 13), {std::log(0.25), std::log(0.75)}, 1e-15);
  col.i("axis", 0);
  Tensor xc = f64({0.0, kLn3}, {2, 1});
  expect_values(run1(col.node, {&xc}, 13), {0.25, 0.75}, 1e-15);
  Tensor bf = f32({5.f, 6.f}, {2, 1});
  expect_error_naming([&] { run1(mm.node, {&a, &bf}, 13); }, mm.node, ErrorCode::kInvalidModel, "float64");
}

}  // namespace
}  // namespace kilnrt::ops::optest
