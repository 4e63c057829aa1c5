// Conv and ConvTranspose against naive references written from the ONNX definitions.
#include "ops/nn/nn_test_util.h"

namespace kilnrt::ops::nn::testing {
namespace {

struct ConvSpec {
  std::vector<int64_t> strides, pads, dilations;  // pads: begins then ends
  int64_t group = 1;
};

// Naive N-D (1..3) convolution: out[n, m, o...] = b[m] + sum_{c, k...} x[n, g*cg + c, o*s - p + k*d] * w[m, c, k...]
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvSpec& sp) {
  const int nd = x.rank() - 2;
  const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), cg = w.dim(1), mg = m / sp.group;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0}, o[3] = {1, 1, 1};
  Shape out_shape = {n, m};
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    in[j] = x.dim(2 + i);
    k[j] = w.dim(2 + i);
    s[j] = sp.strides[i];
    d[j] = sp.dilations[i];
    p[j] = sp.pads[i];
    o[j] = (in[j] + sp.pads[i] + sp.pads[i + nd] - (k[j] - 1) * d[j] - 1) / s[j] + 1;
    out_shape.push_back(o[j]);
  }
  Tensor y = Tensor::zeros(DType::kFloat32, out_shape);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t om = 0; om < m; ++om) {
      const int64_t grp = om / mg;
      for (int64_t o0 = 0; o0 < o[0]; ++o0)
        for (int64_t o1 = 0; o1 < o[1]; ++o1)
          for (int64_t o2 = 0; o2 < o[2]; ++o2) {
            double acc = b ? b->data<float>()[om] : 0.0;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - p[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - p[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - p[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t xc = grp * cg + ic;
                    acc += static_cast<double>(xp[(((bn * c + xc) * in[0] + i0) * in[1] + i1) * in[2] + i2]) *
                           wp[(((om * cg + ic) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
            yp[(((bn * m + om) * o[0] + o0) * o[1] + o1) * o[2] + o2] = static_cast<float>(acc);
          }
    }
  return y;
}

Op conv_op(const ConvSpec& sp, bool with_bias) {
  Op op("Conv", with_bias ? 3 : 2, 1, "conv1");
  op.ints("strides", sp.strides).ints("pads", sp.pads).ints("dilations", sp.dilations).i("group", sp.group);
  return op;
}

void check_conv(const Shape& xs, const Shape& ws, const ConvSpec& sp, bool with_bias, uint32_t seed) {
  Tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 1), b = random_tensor({ws[0]}, seed + 2);
  Op op = conv_op(sp, with_bias);
  Tensor y = with_bias ? run1(op.node, {&x, &w, &b}) : run1(op.node, {&x, &w});
  expect_close(y, naive_conv(x, w, with_bias ? &b : nullptr, sp), 1e-4f, 1e-4f);
}

TEST(NnConv, General2dStridesPadsDilations) {
  check_conv({2, 3, 9, 11}, {4, 3, 3, 3}, {{2, 1}, {1, 0, 2, 1}, {1, 2}, 1}, true, 1);
  check_conv({1, 8, 40, 40}, {4, 8, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, true, 13);  // large: OpenMP im2col
  check_conv({1, 4, 7, 7}, {6, 4, 3, 2}, {{1, 3}, {0, 1, 0, 2}, {2, 1}, 1}, false, 2);
}

TEST(NnConv, Grouped) { check_conv({2, 6, 8, 8}, {9, 2, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 3}, true, 3); }

TEST(NnConv, DepthwiseAndMultiplier) {
  check_conv({2, 5, 10, 9}, {5, 1, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 5}, true, 4);
  check_conv({1, 4, 11, 12}, {4, 1, 5, 5}, {{2, 2}, {2, 2, 2, 2}, {1, 1}, 4}, false, 5);
  check_conv({1, 3, 9, 9}, {6, 1, 3, 3}, {{2, 1}, {0, 1, 2, 1}, {2, 1}, 3}, true, 6);    // channel multiplier 2
  check_conv({2, 8, 32, 30}, {8, 1, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 8}, true, 7);  // large: OpenMP path
}

TEST(NnConv, PointwiseFastPathAndStrided1x1) {
  check_conv({3, 8, 5, 7}, {16, 8, 1, 1}, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1}, true, 7);
  check_conv({2, 8, 6, 6}, {4, 8, 1, 1}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, false, 8);
  check_conv({1, 4, 5, 5}, {4, 2, 1, 1}, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 2}, true, 9);  // grouped 1x1
}

TEST(NnConv, OneAndThreeDims) {
  check_conv({2, 3, 17}, {5, 3, 4}, {{2}, {1, 2}, {2}, 1}, true, 10);
  check_conv({2, 4, 17}, {4, 1, 3}, {{1}, {1, 1}, {1}, 4}, true, 11);  // depthwise 1-D
  check_conv({1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {{1, 2, 1}, {1, 0, 1, 1, 1, 0}, {1, 1, 2}, 1}, true, 12);
}

TEST(NnConv, HandComputed) {
  // 1x1x3x3 input, 2x2 kernel of ones, no padding: window sums.
  Tensor x = make({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = run1(Op("Conv", 2).node, {&x, &w});
  expect_close(y, make({1, 1, 2, 2}, {12, 16, 24, 28}));
}

TEST(NnConv, AutoPadMatchesExplicitPads) {
  Tensor x = random_tensor({1, 2, 7, 8}, 20), w = random_tensor({3, 2, 4, 3}, 21);
  // SAME_UPPER, stride 2: out = ceil(7/2)=4, ceil(8/2)=4; pad H total (4-1)*2+4-7=3 -> 1,2; W (3*2+3-8)=1 -> 0,1.
  Op same_upper = Op("Conv", 2).ints("strides", {2, 2}).s("auto_pad", "SAME_UPPER");
  Op explicit_upper = Op("Conv", 2).ints("strides", {2, 2}).ints("pads", {1, 0, 2, 1});
  expect_close(run1(same_upper.node, {&x, &w}), run1(explicit_upper.node, {&x, &w}));
  Op same_lower = Op("Conv", 2).ints("strides", {2, 2}).s("auto_pad", "SAME_LOWER");
  Op explicit_lower = Op("Conv", 2).ints("strides", {2, 2}).ints("pads", {2, 1, 1, 0});
  expect_close(run1(same_lower.node, {&x, &w}), run1(explicit_lower.node, {&x, &w}));
  Op valid = Op("Conv", 2).s("auto_pad", "VALID").ints("pads", {5, 5, 5, 5});  // pads ignored with auto_pad
  Tensor yv = run1(valid.node, {&x, &w});
  EXPECT_EQ(shape_to_string(yv.shape()), "1x3x4x6");
  expect_close(yv, run1(Op("Conv", 2).node, {&x, &w}));
}

TEST(NnConv, EmptyBatch) {
  Tensor x = Tensor::empty(DType::kFloat32, {0, 3, 5, 5}), w = random_tensor({4, 3, 3, 3}, 30);
  Tensor b = random_tensor({4}, 31);
  Tensor y = run1(Op("Conv", 3).ints("pads", {1, 1, 1, 1}).node, {&x, &w, &b});
  EXPECT_EQ(shape_to_string(y.shape()), "0x4x5x5");
  Tensor wd = random_tensor({3, 1, 3, 3}, 32);
  Tensor yd = run1(Op("Conv", 2).i("group", 3).node, {&x, &wd});
  EXPECT_EQ(shape_to_string(yd.shape()), "0x3x3x3");
}

TEST(NnConv, Float16RoundTrip) {
  Tensor x32 = random_tensor({1, 2, 5, 5}, 40), w32 = random_tensor({3, 2, 3, 3}, 41);
  Tensor x16 = Tensor::empty(DType::kFloat16, x32.shape()), w16 = Tensor::empty(DType::kFloat16, w32.shape());
  for (int64_t i = 0; i < x32.numel(); ++i) x16.data<uint16_t>()[i] = float_to_half(x32.data<float>()[i]);
  for (int64_t i = 0; i < w32.numel(); ++i) w16.data<uint16_t>()[i] = float_to_half(w32.data<float>()[i]);
  Tensor y16 = run1(Op("Conv", 2).node, {&x16, &w16});
  ASSERT_EQ(y16.dtype(), DType::kFloat16);
  Tensor y32 = run1(Op("Conv", 2).node, {&x32, &w32});
  Tensor back = Tensor::empty(DType::kFloat32, y16.shape());
  for (int64_t i = 0; i < y16.numel(); ++i) back.data<float>()[i] = half_to_float(y16.data<uint16_t>()[i]);
  expect_close(back, y32, 2e-2f, 1e-2f);
}

TEST(NnConv, ShapeFunctionKeepsSymbolicBatch) {
  Op op = Op("Conv", 3, 1).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  auto out = infer(op.node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 3, 224, 224}),
                             ttype(DType::kFloat32, {64, 3, 7, 7}), ttype(DType::kFloat32, {64})});
  ASSERT_TRUE(out[0].has_shape);
  EXPECT_EQ(dims_string(out[0].shape), "batchx64x110x110");
  EXPECT_EQ(out[0].shape[0].param, "batch");
  // Unknown spatial dims stay unknown; known ones are computed.
  auto out2 = infer(Op("Conv", 2).s("auto_pad", "SAME_UPPER").node,
                    {ttype(DType::kFloat16, {ir::Dim::symbol("n"), 3, ir::Dim::symbol("h"), 10}),
                     ttype(DType::kFloat16, {8, 3, 3, 3})});
  EXPECT_EQ(out2[0].dtype, DType::kFloat16);
  EXPECT_EQ(out2[0].shape[0].param, "n");
  EXPECT_FALSE(out2[0].shape[2].known());
  EXPECT_EQ(out2[0].shape[3].value, 10);
}

TEST(NnConv, ClearErrors) {
  Tensor x = random_tensor({1, 3, 5, 5}, 50), w = random_tensor({4, 2, 3, 3}, 51);
  expect_error(
      [&] {
        run1(Op("Conv", 2, 1, "conv_bad").node, {&x, &w});
      },
      ErrorCode::kInvalidArgument, "conv_bad", "3 channels");
  Tensor x3 = random_tensor({3, 5, 5}, 52);
  expect_error(
      [&] {
        run1(Op("Conv", 2, 1, "conv_rank").node, {&x3, &w});
      },
      ErrorCode::kInvalidArgument, "conv_rank", "rank");
  Tensor w3 = random_tensor({4, 3, 3, 3}, 53), b = random_tensor({5}, 54);
  expect_error(
      [&] {
        run1(Op("Conv", 3, 1, "conv_bias").node, {&x, &w3, &b});
      },
      ErrorCode::kInvalidArgument, "conv_bias", "bias");
  Tensor big = random_tensor({4, 3, 9, 9}, 55);
  expect_error(
      [&] {
        run1(Op("Conv", 2, 1, "conv_small").node, {&x, &big});
      },
      ErrorCode::kInvalidArgument, "conv_small", "smaller than the effective kernel");
  expect_error(
      [&] {
        infer(Op("Conv", 2, 1, "conv_infer").node,
              {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 3, 5, 5}), ttype(DType::kFloat32, {4, 2, 3, 3})});
      },
      ErrorCode::kInvalidArgument, "conv_infer", "3 channels");
  Tensor xi = Tensor::zeros(DType::kInt32, {1, 3, 5, 5});
  expect_error(
      [&] {
        run1(Op("Conv", 2, 1, "conv_int").node, {&xi, &w3});
      },
      ErrorCode::kUnsupported, "conv_int", "int32");
}

// ---- ConvTranspose ---------------------------------------------------------------------------------------------

struct ConvTSpec {
  std::vector<int64_t> strides, pads, dilations, output_padding;
  int64_t group = 1;
};

// Naive 2-D transposed convolution by scattering: y[n, g*mg+m, i*s - p + k*d] += x[n, g*cg+c, i] * w[g*cg+c, m, k]
Tensor naive_conv_transpose_2d(const Tensor& x, const Tensor& w, const Tensor* b, const ConvTSpec& sp) {
  const int64_t n = x.dim(0), c = x.dim(1), cg = c / sp.group, mg = w.dim(1), m = mg * sp.group;
  const int64_t ih = x.dim(2), iw = x.dim(3), kh = w.dim(2), kw = w.dim(3);
  const int64_t oh =
      sp.strides[0] * (ih - 1) + sp.output_padding[0] + (kh - 1) * sp.dilations[0] + 1 - sp.pads[0] - sp.pads[2];
  const int64_t ow =
      sp.strides[1] * (iw - 1) + sp.output_padding[1] + (kw - 1) * sp.dilations[1] + 1 - sp.pads[1] - sp.pads[3];
  Tensor y = Tensor::zeros(DType::kFloat32, {n, m, oh, ow});
  float* yp = y.data<float>();
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t om = 0; om < m; ++om)
      for (int64_t i = 0; i < oh * ow; ++i) yp[(bn * m + om) * oh * ow + i] = b ? b->data<float>()[om] : 0.f;
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t grp = ic / cg;
      for (int64_t mm = 0; mm < mg; ++mm)
        for (int64_t y0 = 0; y0 < ih; ++y0)
          for (int64_t x0 = 0; x0 < iw; ++x0)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t py = y0 * sp.strides[0] - sp.pads[0] + a * sp.dilations[0];
                const int64_t px = x0 * sp.strides[1] - sp.pads[1] + e * sp.dilations[1];
                if (py < 0 || py >= oh || px < 0 || px >= ow) continue;
                const int64_t om = grp * mg + mm;
                yp[((bn * m + om) * oh + py) * ow + px] += x.data<float>()[((bn * c + ic) * ih + y0) * iw + x0] *
                                                           w.data<float>()[((ic * mg + mm) * kh + a) * kw + e];
              }
    }
  return y;
}

void check_conv_transpose(const Shape& xs, const Shape& ws, const ConvTSpec& sp, bool with_bias, uint32_t seed) {
  const int64_t m = ws[1] * sp.group;
  Tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 1), b = random_tensor({m}, seed + 2);
  Op op = Op("ConvTranspose", with_bias ? 3 : 2, 1, "deconv")
              .ints("strides", sp.strides)
              .ints("pads", sp.pads)
              .ints("dilations", sp.dilations)
              .ints("output_padding", sp.output_padding)
              .i("group", sp.group);
  Tensor y = with_bias ? run1(op.node, {&x, &w, &b}) : run1(op.node, {&x, &w});
  expect_close(y, naive_conv_transpose_2d(x, w, with_bias ? &b : nullptr, sp), 1e-4f, 1e-4f);
}

TEST(NnConvTranspose, StridesPadsDilationsOutputPadding) {
  check_conv_transpose({2, 3, 4, 5}, {3, 2, 3, 3}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 0}, 1}, true, 60);
  check_conv_transpose({1, 2, 5, 3}, {2, 3, 2, 4}, {{1, 3}, {0, 2, 1, 0}, {2, 1}, {0, 2}, 1}, false, 61);
  check_conv_transpose({1, 4, 3, 3}, {4, 1, 3, 3}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}, 4}, true, 62);  // dw
  check_conv_transpose({2, 6, 3, 4}, {6, 2, 2, 2}, {{2, 1}, {0, 1, 0, 0}, {1, 2}, {1, 0}, 3}, true, 63);
}

TEST(NnConvTranspose, HandComputedAndOutputShape) {
  // 1x1x2x2 input, 2x2 ones kernel, stride 1: each output sums the inputs whose window covers it.
  Tensor x = make({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = make({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_close(run1(Op("ConvTranspose", 2).node, {&x, &w}), make({1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // output_shape 2x2 with stride 1: total padding 1 -> NOTSET puts the extra at the start: pads (1,1,0,0).
  Tensor y = run1(Op("ConvTranspose", 2).ints("output_shape", {2, 2}).node, {&x, &w});
  expect_close(y, make({1, 1, 2, 2}, {10, 6, 7, 4}));
  Tensor yu = run1(Op("ConvTranspose", 2).ints("output_shape", {2, 2}).s("auto_pad", "SAME_UPPER").node, {&x, &w});
  expect_close(yu, make({1, 1, 2, 2}, {1, 3, 4, 10}));
  // SAME_UPPER without output_shape: output = input * stride.
  Tensor x3 = random_tensor({1, 2, 3, 3}, 64), w3 = random_tensor({2, 2, 3, 3}, 65);
  Tensor ys = run1(Op("ConvTranspose", 2).ints("strides", {2, 2}).s("auto_pad", "SAME_UPPER").node, {&x3, &w3});
  EXPECT_EQ(shape_to_string(ys.shape()), "1x2x6x6");
}

TEST(NnConvTranspose, ShapeFunctionAndErrors) {
  Op op = Op("ConvTranspose", 2).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("output_padding", {1, 1});
  auto out = infer(op.node,
                   {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 8, 7, 7}), ttype(DType::kFloat32, {8, 4, 3, 3})});
  EXPECT_EQ(dims_string(out[0].shape), "batchx4x14x14");
  Tensor x = random_tensor({1, 3, 4, 4}, 66), w = random_tensor({4, 2, 3, 3}, 67);
  expect_error(
      [&] {
        run1(Op("ConvTranspose", 2, 1, "deconv_bad").node, {&x, &w});
      },
      ErrorCode::kInvalidArgument, "deconv_bad", "3 channels");
  Tensor x0 = Tensor::empty(DType::kFloat32, {0, 4, 4, 4});
  EXPECT_EQ(shape_to_string(run1(Op("ConvTranspose", 2).node, {&x0, &w}).shape()), "0x2x6x6");
}

}  // namespace
}  // namespace kilnrt::ops::nn::testing
