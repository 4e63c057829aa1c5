// CPU reference edge cases of ops checked against ONNX conformance: Resize/Upsample, RNN/GRU/LSTM, NonMaxSuppression,
// RoiAlign, MaxUnpool, quantization, GridSample, Einsum, Unique, ReverseSequence, signal ops, Det, MVN, training
// optimizers, BitShift and the int16/uint16/uint32/uint64 dtypes, bfloat16 Cast rounding. One or more edge cases
// each; ONNX's node cases (tests/python/test_conformance.py) cover the rest.
#include <cmath>
#include <cstring>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

Tensor u16(const std::vector<uint16_t>& v, const Shape& s) { return Tensor::from_data(v.data(), DType::kUInt16, s); }
Tensor u64(const std::vector<uint64_t>& v, const Shape& s) { return Tensor::from_data(v.data(), DType::kUInt64, s); }
Tensor i16(const std::vector<int16_t>& v, const Shape& s) { return Tensor::from_data(v.data(), DType::kInt16, s); }

TEST(OpsResizeEdgeCases, NearestModesAndAlignCornersLinear) {
  Tensor x = f32({1, 2, 3, 4}, {1, 1, 1, 4});
  Tensor empty = f32({}, {0});
  Tensor scales = f32({1, 1, 1, 0.5f}, {4});
  // downsample x0.5, asymmetric + ceil picks index 0 -> 0, 1 -> ceil(2) = 2
  Node n("Resize", 3);
  n.s("mode", "nearest").s("coordinate_transformation_mode", "asymmetric").s("nearest_mode", "ceil");
  Tensor y = run1(n.node, {&x, &empty, &scales}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  expect_values(y, {1, 3});
  // sizes, linear, align_corners: 4 -> 3 samples at 0, 1.5, 3
  Tensor sizes = i64({1, 1, 1, 3}, {4});
  Node l("Resize", 4);
  l.s("mode", "linear").s("coordinate_transformation_mode", "align_corners");
  expect_values(run1(l.node, {&x, &empty, &empty, &sizes}, 13), {1, 2.5, 4});
  // both scales and sizes: an error naming the node
  expect_error_naming([&] { run1(l.node, {&x, &empty, &scales, &sizes}, 13); }, l.node, ErrorCode::kInvalidModel);
}

TEST(OpsResizeEdgeCases, CubicExcludeOutsideAndExtrapolation) {
  Tensor x = f32({1, 2, 3, 4}, {4});
  Tensor empty = f32({}, {0});
  Tensor scales = f32({2}, {1});
  Node c("Resize", 3);
  c.s("mode", "cubic").i("exclude_outside", 1).f("cubic_coeff_a", -0.5f);
  Tensor y = run1(c.node, {&x, &empty, &scales}, 13);
  ASSERT_EQ(y.numel(), 8);
  // Cubic convolution reproduces a linear ramp inside; at the border the outside taps are dropped.
  EXPECT_NEAR(values(y)[3], 2.25, 1e-6);
  EXPECT_NEAR(values(y)[0], 0.7265625 / 0.796875, 1e-6);  // taps -2, -1 excluded, the rest renormalized
  // tf_crop_and_resize outside the roi: extrapolation_value
  Tensor roi = f32({0.5f, 1.5f}, {2});
  Tensor sizes = i64({3}, {1});
  Node t("Resize", 4);
  t.s("mode", "linear").s("coordinate_transformation_mode", "tf_crop_and_resize").f("extrapolation_value", -7.f);
  // samples at 1.5, 3 and 4.5 (past the last pixel, 3)
  expect_values(run1(t.node, {&x, &roi, &empty, &sizes}, 13), {2.5, 4, -7});
}

TEST(OpsResizeEdgeCases, UpsampleNearestRepeats) {
  Tensor x = f32({1, 2}, {1, 2});
  Tensor scales = f32({1, 2}, {2});
  Node n("Upsample", 2);
  expect_values(run1(n.node, {&x, &scales}, 9), {1, 1, 2, 2});
}

TEST(OpsRnnEdgeCases, GruAndLstmShapesAndSequenceLens) {
  // batch 2, seq 3, input 1, hidden 1; the second entry has length 1: later steps are zero, Y_h is step 0's.
  Tensor x = f32({1, 1, 1, 1, 1, 1}, {3, 2, 1});
  Tensor w = f32({0.5f, 0.5f, 0.5f}, {1, 3, 1});
  Tensor r = f32({0.1f, 0.1f, 0.1f}, {1, 3, 1});
  Tensor lens = i32({3, 1}, {2});
  Node g("GRU", 5, 2);
  g.i("hidden_size", 1);
  std::vector<Tensor> out = run(g.node, {&x, &w, &r, nullptr, &lens}, 14);
  EXPECT_EQ(out[0].shape(), (Shape{3, 1, 2, 1}));
  EXPECT_EQ(out[1].shape(), (Shape{1, 2, 1}));
  const std::vector<double> y = values(out[0]);
  EXPECT_EQ(y[3], 0.0);  // t=1, batch 1: past its length
  EXPECT_EQ(y[5], 0.0);
  EXPECT_DOUBLE_EQ(values(out[1])[1], y[1]);
  // LSTM, reverse: one step from zero state: c = sigmoid(a) * tanh(a), h = sigmoid(a) * tanh(c), a = 1 * 1
  Tensor x1 = f32({1}, {1, 1, 1});
  Tensor w4 = f32({1, 1, 1, 1}, {1, 4, 1});
  Tensor r4 = f32({0, 0, 0, 0}, {1, 4, 1});
  Node l("LSTM", 3, 3);
  l.i("hidden_size", 1).s("direction", "reverse");
  out = run(l.node, {&x1, &w4, &r4}, 14);
  const double sg = 1 / (1 + std::exp(-1.0)), c = sg * std::tanh(1.0);
  expect_values(out[2], {c}, 1e-6);
  expect_values(out[1], {sg * std::tanh(c)}, 1e-6);
  ir::Attribute acts;
  acts.kind = ir::Attribute::Kind::kStrings;
  acts.strings = {"NoSuchActivation"};
  Node bad("RNN", 3);
  bad.i("hidden_size", 1).attr("activations", acts);
  Tensor w1 = f32({1}, {1, 1, 1});
  expect_error_naming([&] { run(bad.node, {&x1, &w1, &w1}, 14); }, bad.node, ErrorCode::kUnsupported);
}

TEST(OpsDetectionEdgeCases, NmsZeroMaxOutputAndCenterBoxes) {
  Tensor boxes = f32({0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 5, 5, 1, 1}, {1, 3, 4});
  Tensor scores = f32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  Tensor zero = i64({0}, {1});
  Tensor two = i64({2}, {1});
  Tensor iou = f32({0.5f}, {1});
  Node n("NonMaxSuppression", 4);
  n.i("center_point_box", 1);
  EXPECT_EQ(run1(n.node, {&boxes, &scores, &zero, &iou}, 11).shape(), (Shape{0, 3}));
  Tensor sel = run1(n.node, {&boxes, &scores, &two, &iou}, 11);
  EXPECT_EQ(ints_of(sel), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));  // box 1 overlaps box 0
}

TEST(OpsDetectionEdgeCases, RoiAlignConstantImageAndMaxUnpool) {
  Tensor x = f32(std::vector<float>(16, 3.f), {1, 1, 4, 4});
  Tensor rois = f32({0, 0, 3, 3}, {1, 4});
  Tensor idx = i64({0}, {1});
  Node r("RoiAlign", 3);
  r.i("output_height", 2).i("output_width", 2).i("sampling_ratio", 2);
  expect_values(run1(r.node, {&x, &rois, &idx}, 16), {3, 3, 3, 3});
  Tensor v = f32({5, 6}, {1, 1, 1, 2});
  Tensor ind = i64({1, 3}, {1, 1, 1, 2});
  Node u("MaxUnpool", 2);
  u.ints("kernel_shape", {1, 2}).ints("strides", {1, 2});
  expect_values(run1(u.node, {&v, &ind}, 11), {0, 5, 0, 6});
  Tensor bad = i64({1, 9}, {1, 1, 1, 2});
  expect_error_naming([&] { run1(u.node, {&v, &bad}, 11); }, u.node, ErrorCode::kInvalidArgument);
}

TEST(OpsQuantEdgeCases, QuantizeRoundsHalfToEvenAndSaturates) {
  Tensor x = f32({0.5f, 1.5f, 2.5f, 1000.f, -1000.f}, {5});
  Tensor scale = f32({1}, {});
  Tensor zp = u8({0}, {});
  Node q("QuantizeLinear", 3);
  Tensor y = run1(q.node, {&x, &scale, &zp}, 13);
  EXPECT_EQ(y.dtype(), DType::kUInt8);
  expect_values(y, {0, 2, 2, 255, 0});
  Tensor zi = i8({0}, {});
  expect_values(run1(q.node, {&x, &scale, &zi}, 13), {0, 2, 2, 127, -128});
  Node d("DequantizeLinear", 3);
  Tensor xi = u8({0, 10, 255}, {3});
  Tensor z5 = u8({5}, {});
  Tensor s2 = f32({2}, {});
  expect_values(run1(d.node, {&xi, &s2, &z5}, 13), {-10, 10, 500});
  Tensor flat = f32({0, 0}, {2});
  std::vector<Tensor> dq = run(Node("DynamicQuantizeLinear", 1, 3).node, {&flat}, 11);
  expect_values(dq[0], {0, 0});  // a zero range: scale 0, no division by zero
}

TEST(OpsQuantEdgeCases, IntegerMatMulAndConv) {
  Tensor a = u8({1, 2, 3, 4}, {2, 2});
  Tensor b = u8({1, 0, 0, 1}, {2, 2});
  Tensor azp = u8({1}, {});
  Tensor y = run1(Node("MatMulInteger", 3).node, {&a, &b, &azp}, 10);
  EXPECT_EQ(y.dtype(), DType::kInt32);
  expect_values(y, {0, 1, 2, 3});
  Tensor x = u8({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor w = u8({1}, {1, 1, 1, 1});
  Node c("ConvInteger", 2);
  c.ints("pads", {1, 1, 1, 1});
  Tensor yc = run1(c.node, {&x, &w}, 10);
  EXPECT_EQ(yc.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(values(yc)[5], 1);
}

// Fuzz finding (onnx_build, a 1M-input run, at 653,473): MatMulInteger with per-row / per-column zero points
// of the wrong length read past them (ASan heap-buffer-overflow); input
// tests/fixtures/fuzz/onnx_build/matmulinteger_zero_point_length.
TEST(OpsQuantEdgeCases, MatMulIntegerZeroPointLengthsAreChecked) {
  Tensor a = u8({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = u8({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor bad_azp = u8({1, 2, 3}, {3});  // A has 2 rows
  Tensor bzp = u8({0}, {1});
  EXPECT_THROW(run1(Node("MatMulInteger", 4).node, {&a, &b, &bad_azp, &bzp}, 10), Error);
  Tensor azp = u8({0}, {1});
  Tensor bad_bzp = u8({1, 2, 3, 4, 5}, {5});  // B has 2 columns
  EXPECT_THROW(run1(Node("MatMulInteger", 4).node, {&a, &b, &azp, &bad_bzp}, 10), Error);
  Tensor empty_zp = u8({}, {0});
  EXPECT_THROW(run1(Node("MatMulInteger", 4).node, {&a, &b, &empty_zp, &bzp}, 10), Error);
  Tensor row_azp = u8({1, 2}, {2});
  // y[m][n] = sum_k (a[m][k] - azp[m]) * b[k][n]: row 0 (0,1,2) -> (2, 3); row 1 (2,3,4) -> (6, 7)
  expect_values(run1(Node("MatMulInteger", 4).node, {&a, &b, &row_azp, &bzp}, 10), {2, 3, 6, 7});
}

TEST(OpsGridSampleEdgeCases, IdentityGridAndZerosPadding) {
  Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  // align_corners=1: corners map to pixel centres; (x=3, y=0) is outside -> 0 with zeros padding
  Tensor grid = f32({-1, -1, 1, 1, 3, 0}, {1, 1, 3, 2});
  Node g("GridSample", 2);
  g.i("align_corners", 1);
  expect_values(run1(g.node, {&x, &grid}, 16), {1, 4, 0});
  Node b("GridSample", 2);
  b.i("align_corners", 1).s("padding_mode", "border");
  expect_values(run1(b.node, {&x, &grid}, 16), {1, 4, 3});
}

TEST(OpsEinsumEdgeCases, DiagonalImplicitOutputAndEllipsis) {
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  Node tr("Einsum", 1);
  tr.s("equation", "ii");  // implicit output: trace
  Tensor t = run1(tr.node, {&m}, 12);
  EXPECT_EQ(t.rank(), 0);
  expect_values(t, {5});
  Tensor a = f32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Node bm("Einsum", 2);
  bm.s("equation", "...ij,...jk->...ik");
  Tensor y = run1(bm.node, {&a, &m}, 12);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expect_values(y, {7, 10, 15, 22, 23, 34, 31, 46});
}

TEST(OpsUniqueEdgeCases, UnsortedFirstOccurrenceAndAxis) {
  Tensor x = f32({2, 1, 1, 3, 4, 3}, {6});
  Node u("Unique", 1, 4);
  u.i("sorted", 0);
  std::vector<Tensor> out = run(u.node, {&x}, 11);
  expect_values(out[0], {2, 1, 3, 4});
  EXPECT_EQ(ints_of(out[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints_of(out[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints_of(out[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  Tensor rows = f32({1, 0, 0, 1, 1, 0}, {3, 2});
  Node a("Unique", 1);
  a.i("axis", 0);
  Tensor y = run1(a.node, {&rows}, 11);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_values(y, {0, 1, 1, 0});
}

TEST(OpsShapeEdgeCases, ReverseSequenceZeroLengthKeepsData) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {3, 2});  // time x batch
  Tensor lens = i64({3, 0}, {2});
  expect_values(run1(Node("ReverseSequence", 2).node, {&x, &lens}, 10), {5, 2, 3, 4, 1, 6});
}

TEST(OpsSignalEdgeCases, WindowsDftAndMel) {
  Tensor n4 = i64_scalar(4);
  expect_values(run1(Node("HannWindow", 1).node, {&n4}, 17), {0, 0.5, 1, 0.5}, 1e-6);
  Node sym("HannWindow", 1);
  sym.i("periodic", 0);
  Tensor n1 = i64_scalar(1);
  expect_values(run1(sym.node, {&n1}, 17), {0.0});  // a one-point symmetric window does not divide by zero
  Tensor x = f32({1, 0, 0, 0}, {1, 4, 1});          // impulse: flat spectrum
  Node d("DFT", 1);
  d.i("onesided", 1);
  Tensor y = run1(d.node, {&x}, 17);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2}));
  expect_values(y, {1, 0, 1, 0, 1, 0}, 1e-9);
  Node inv("DFT", 1);
  inv.i("inverse", 1);
  Tensor c = f32({4, 0, 0, 0, 0, 0, 0, 0}, {1, 4, 2});
  expect_values(run1(inv.node, {&c}, 17), {1, 0, 1, 0, 1, 0, 1, 0}, 1e-9);
}

TEST(OpsMathEdgeCases, DetSingularAndPivot) {
  Tensor sing = f32({1, 2, 2, 4}, {2, 2});
  expect_values(run1(Node("Det", 1).node, {&sing}, 11), {0});
  Tensor piv = f32({0, 1, 1, 0, 2, 0, 0, 3}, {2, 2, 2});
  expect_values(run1(Node("Det", 1).node, {&piv}, 11), {-1, 6});
  Tensor x = f32({1, 3}, {1, 1, 1, 2});
  expect_values(run1(Node("MeanVarianceNormalization", 1).node, {&x}, 13), {-1, 1}, 1e-6);
}

TEST(OpsTrainingEdgeCases, MomentumNesterovAndAdagradFirstStep) {
  Tensor r = f32({0.1f}, {});
  Tensor t0 = i64_scalar(0);
  Tensor x = f32({1}, {1});
  Tensor g = f32({2}, {1});
  Tensor v = f32({0}, {1});
  Node m("Momentum", 5, 2);
  m.node.domain = "ai.onnx.preview.training";
  m.f("alpha", 0.5f).f("beta", 0.25f).f("norm_coefficient", 0.f).s("mode", "nesterov");
  std::vector<Tensor> out = run(m.node, {&r, &t0, &x, &g, &v}, 1);
  // T = 0: beta is not applied: v = 2, x = 1 - 0.1 * (2 + 0.5 * 2) = 0.7
  expect_values(out[1], {2}, 1e-6);
  expect_values(out[0], {0.7}, 1e-6);
  Node a("Adagrad", 5, 2);
  a.node.domain = "ai.onnx.preview.training";
  a.f("epsilon", 0.f);
  out = run(a.node, {&r, &t0, &x, &g, &v}, 1);
  expect_values(out[0], {1 - 0.1}, 1e-6);  // g / sqrt(g^2) = 1
  Node bad("Adagrad", 4, 2);
  bad.node.domain = "ai.onnx.preview.training";
  expect_error_naming([&] { run(bad.node, {&r, &t0, &x, &g}, 1); }, bad.node, ErrorCode::kInvalidModel);
}

TEST(OpsDtypesEdgeCases, BitShiftAndNewIntegerTypes) {
  Tensor a = u16({1, 0x8000, 7}, {3});
  Tensor s = u16({15, 1, 16}, {3});
  Node l("BitShift", 2);
  l.s("direction", "LEFT");
  Tensor y = run1(l.node, {&a, &s}, 11);
  EXPECT_EQ(y.dtype(), DType::kUInt16);
  expect_values(y, {32768, 0, 0});  // shifting by the width or more gives 0
  Tensor big = u64({~0ull}, {1});
  Tensor one = u64({1}, {1});
  Node rgt("BitShift", 2);
  rgt.s("direction", "RIGHT");
  EXPECT_EQ(run1(rgt.node, {&big, &one}, 11).data<uint64_t>()[0], ~0ull >> 1);
  Tensor neg = i8({1}, {1});
  expect_error_naming([&] { run1(rgt.node, {&neg, &neg}, 11); }, rgt.node, ErrorCode::kUnsupported);
  // int16 Mod with mixed signs follows the divisor's sign (fmod = 0)
  Tensor x = i16({-4, 7}, {2});
  Tensor m = i16({3, -3}, {2});
  expect_values(run1(Node("Mod", 2).node, {&x, &m}, 13), {2, -2});
  Tensor mx = run1(Node("Max", 2).node, {&a, &s}, 13);
  expect_values(mx, {15, 0x8000, 16});
  EXPECT_EQ(dtype_size(DType::kUInt32), 4u);
  EXPECT_STREQ(dtype_name(DType::kUInt64), "uint64");
  EXPECT_TRUE(dtype_is_valid(5));
  EXPECT_FALSE(dtype_is_valid(14));
}

TEST(OpsDtypesEdgeCases, CastToBFloat16TruncatesBeforeOpset19) {
  // 1 + 2^-8 + 2^-9 rounds up to 1 + 2^-7 (nearest even) but truncates to 1.
  const float v = 1.0f + 1.0f / 256 + 1.0f / 512;
  Tensor x = f32({v}, {1});
  Node c("Cast", 1);
  c.i("to", static_cast<int64_t>(DType::kBFloat16));
  EXPECT_EQ(run1(c.node, {&x}, 13).data<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(run1(c.node, {&x}, 19).data<uint16_t>()[0], 0x3f81);
  Tensor n = f32({NAN}, {1});
  EXPECT_TRUE(std::isnan(bfloat16_to_float(run1(c.node, {&n}, 13).data<uint16_t>()[0])));
}

}  // namespace
}  // namespace kilnrt::ops::optest
