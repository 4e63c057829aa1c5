// nn ops: registry coverage over opsets, Softmax / LogSoftmax, Flatten, Dropout, and reduced-precision inputs.
// Conv, Gemm/MatMul, pools and normalizations have their own tests next to the ops (src/ops/nn/*_test.cc).
#include <cmath>
#include <cstring>

#include "ops/nn/nn_test_util.h"

namespace kilnrt::ops::nn::testing {
namespace {

TEST(NnRegistry, EveryOpHasKernelAndShapeFunctionAtOpsets13To21) {
  const char* ops[] = {"Conv",
                       "ConvTranspose",
                       "Gemm",
                       "MatMul",
                       "MaxPool",
                       "AveragePool",
                       "GlobalAveragePool",
                       "GlobalMaxPool",
                       "BatchNormalization",
                       "InstanceNormalization",
                       "Softmax",
                       "LogSoftmax",
                       "Flatten",
                       "Dropout",
                       "LRN"};
  for (const char* op : ops) {
    for (int64_t opset = 13; opset <= 21; ++opset) {
      const OpSchema* s = OpRegistry::instance().find("", op, opset);
      ASSERT_NE(s, nullptr) << op << " at opset " << opset;
      EXPECT_TRUE(static_cast<bool>(s->cpu)) << op;
      EXPECT_TRUE(static_cast<bool>(s->infer)) << op;
      EXPECT_FALSE(s->dtypes.empty()) << op;
    }
  }
  EXPECT_NE(OpRegistry::instance().find("", "LayerNormalization", 17), nullptr);
  EXPECT_EQ(OpRegistry::instance().find("", "LayerNormalization", 16), nullptr);
  EXPECT_NE(OpRegistry::instance().find("", "GroupNormalization", 18), nullptr);
  EXPECT_NE(OpRegistry::instance().find("", "GroupNormalization", 21), nullptr);
}

// Softmax of x along `axis` in double.
Tensor naive_softmax(const Tensor& x, int64_t axis, bool log) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[axis];
  Tensor y = Tensor::empty(DType::kFloat32, s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double mx = -1e300, sum = 0.0;
      for (int64_t i = 0; i < len; ++i) mx = std::max(mx, double(x.data<float>()[(o * len + i) * inner + in]));
      for (int64_t i = 0; i < len; ++i) sum += std::exp(x.data<float>()[(o * len + i) * inner + in] - mx);
      for (int64_t i = 0; i < len; ++i) {
        const double v = x.data<float>()[(o * len + i) * inner + in] - mx;
        y.data<float>()[(o * len + i) * inner + in] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  return y;
}

TEST(NnSoftmax, AxesOpset13) {
  Tensor x = random_tensor({2, 3, 4, 5}, 1, -5.f, 5.f);
  for (int64_t axis : {-1, 0, 1, 2, -3}) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    expect_close(run1(Op("Softmax", 1).i("axis", axis).node, {&x}), naive_softmax(x, a, false), 1e-6f, 1e-5f);
    expect_close(run1(Op("LogSoftmax", 1).i("axis", axis).node, {&x}), naive_softmax(x, a, true), 1e-5f, 1e-5f);
  }
  // Default axis is -1 from opset 13.
  expect_close(run1(Op("Softmax", 1).node, {&x}), naive_softmax(x, 3, false), 1e-6f, 1e-5f);
  // Large values do not overflow.
  Tensor big = make({1, 3}, {1000.f, 1000.f, 1000.f});
  expect_close(run1(Op("Softmax", 1).node, {&big}), make({1, 3}, {1 / 3.f, 1 / 3.f, 1 / 3.f}));
}

TEST(NnSoftmax, Opset11CoercesTo2d) {
  Tensor x = random_tensor({2, 3, 4}, 2);
  // axis=1 (default before 13): softmax over the 12 trailing elements of each batch row.
  Tensor y = run1(Op("Softmax", 1).node, {&x}, 11);
  Tensor ref = naive_softmax(x.reshaped({2, 12}), 1, false);
  expect_close(y.reshaped({2, 12}), ref, 1e-6f, 1e-5f);
}

TEST(NnSoftmax, ShapeEmptyAndErrors) {
  auto out = infer(Op("Softmax", 1).node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 10})});
  EXPECT_EQ(dims_string(out[0].shape), "batchx10");
  Tensor x0 = Tensor::empty(DType::kFloat32, {0, 4});
  EXPECT_EQ(shape_to_string(run1(Op("Softmax", 1).node, {&x0}).shape()), "0x4");
  Tensor x = random_tensor({2, 3}, 3);
  expect_error([&] { run1(Op("Softmax", 1, 1, "sm").i("axis", 2).node, {&x}); }, ErrorCode::kInvalidModel, "sm",
               "axis");
}

TEST(NnFlatten, ViewsAndSymbolicShapes) {
  Tensor x = random_tensor({2, 3, 4, 5}, 10);
  Tensor y = run1(Op("Flatten", 1).node, {&x});
  EXPECT_EQ(shape_to_string(y.shape()), "2x60");
  EXPECT_EQ(y.raw(), x.raw());  // a view, no copy
  EXPECT_EQ(shape_to_string(run1(Op("Flatten", 1).i("axis", 0).node, {&x}).shape()), "1x120");
  EXPECT_EQ(shape_to_string(run1(Op("Flatten", 1).i("axis", 4).node, {&x}).shape()), "120x1");
  EXPECT_EQ(shape_to_string(run1(Op("Flatten", 1).i("axis", -2).node, {&x}).shape()), "6x20");
  Tensor x0 = Tensor::empty(DType::kFloat32, {0, 3, 2});
  EXPECT_EQ(shape_to_string(run1(Op("Flatten", 1).node, {&x0}).shape()), "0x6");
  auto out = infer(Op("Flatten", 1).node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 512, 1, 1})});
  EXPECT_EQ(dims_string(out[0].shape), "batchx512");
  auto out2 = infer(Op("Flatten", 1).i("axis", 2).node,
                    {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 4, ir::Dim::symbol("h"), 3})});
  EXPECT_EQ(out2[0].shape[0].param, "");
  EXPECT_FALSE(out2[0].shape[0].known());
  EXPECT_FALSE(out2[0].shape[1].known());
  expect_error([&] { run1(Op("Flatten", 1, 1, "fl").i("axis", 5).node, {&x}); }, ErrorCode::kInvalidModel, "fl",
               "axis");
}

TEST(NnDropout, IdentityAndMask) {
  Tensor x = random_tensor({2, 3}, 20);
  std::vector<Tensor> out = run(Op("Dropout", 1, 2).node, {&x});
  EXPECT_EQ(out[0].raw(), x.raw());
  ASSERT_EQ(out[1].dtype(), DType::kBool);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_EQ(out[1].data<uint8_t>()[i], 1);
  Tensor ratio = make({}, {0.3f});
  Tensor train = Tensor::empty(DType::kBool, {});
  train.data<uint8_t>()[0] = 0;
  Tensor y = run1(Op("Dropout", 3).node, {&x, &ratio, &train});
  EXPECT_EQ(values(y), values(x));
  train.data<uint8_t>()[0] = 1;
  expect_error(
      [&] {
        run1(Op("Dropout", 3, 1, "drop").node, {&x, &ratio, &train});
      },
      ErrorCode::kUnsupported, "drop", "training_mode");
  auto shapes = infer(Op("Dropout", 1, 2).node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 3})});
  EXPECT_EQ(dims_string(shapes[1].shape), "batchx3");
  EXPECT_EQ(shapes[1].dtype, DType::kBool);
}

TEST(NnDtypes, BFloat16MatMulAndSoftmax) {
  Tensor a32 = random_tensor({3, 4}, 30), b32 = random_tensor({4, 2}, 31);
  auto to_bf16 = [](const Tensor& t) {
    Tensor r = Tensor::empty(DType::kBFloat16, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) r.data<uint16_t>()[i] = float_to_bfloat16(t.data<float>()[i]);
    return r;
  };
  auto to_f32 = [](const Tensor& t) {
    Tensor r = Tensor::empty(DType::kFloat32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = bfloat16_to_float(t.data<uint16_t>()[i]);
    return r;
  };
  Tensor a = to_bf16(a32), b = to_bf16(b32);
  Tensor y = run1(Op("MatMul", 2).node, {&a, &b});
  ASSERT_EQ(y.dtype(), DType::kBFloat16);
  Tensor a_rt = to_f32(a), b_rt = to_f32(b);
  expect_close(to_f32(y), run1(Op("MatMul", 2).node, {&a_rt, &b_rt}), 1e-2f, 1e-2f);
  Tensor s = run1(Op("Softmax", 1).node, {&a});
  ASSERT_EQ(s.dtype(), DType::kBFloat16);
  expect_close(to_f32(s), run1(Op("Softmax", 1).node, {&a_rt}), 1e-2f, 1e-2f);
}

}  // namespace
}  // namespace kilnrt::ops::nn::testing
