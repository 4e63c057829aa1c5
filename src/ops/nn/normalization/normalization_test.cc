// BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization and LRN against naive
// references computed in double.
#include <cmath>

#include "ops/nn/nn_test_util.h"

namespace kilnrt::ops::nn::testing {
namespace {

TEST(NnBatchNorm, InferenceMatchesFormula) {
  Tensor x = random_tensor({2, 3, 4, 5}, 1);
  Tensor scale = random_tensor({3}, 2), bias = random_tensor({3}, 3), mean = random_tensor({3}, 4);
  Tensor var = random_tensor({3}, 5, 0.1f, 2.f);
  Tensor y = run1(Op("BatchNormalization", 5).f("epsilon", 1e-3f).node, {&x, &scale, &bias, &mean, &var}, 15);
  Tensor ref = Tensor::empty(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 20) % 3;
    ref.data<float>()[i] = static_cast<float>((x.data<float>()[i] - mean.data<float>()[c]) /
                                                  std::sqrt(var.data<float>()[c] + 1e-3) * scale.data<float>()[c] +
                                              bias.data<float>()[c]);
  }
  expect_close(y, ref, 1e-5f, 1e-5f);
  // Rank 2 input [N, C] and an empty batch.
  Tensor x2 = random_tensor({4, 3}, 6);
  Tensor y2 = run1(Op("BatchNormalization", 5).node, {&x2, &scale, &bias, &mean, &var}, 9);
  EXPECT_NEAR(
      y2.data<float>()[4],
      (x2.data<float>()[4] - mean.data<float>()[1]) / std::sqrt(var.data<float>()[1] + 1e-5) * scale.data<float>()[1] +
          bias.data<float>()[1],
      1e-5);
  Tensor x0 = Tensor::empty(DType::kFloat32, {0, 3, 2, 2});
  EXPECT_EQ(shape_to_string(run1(Op("BatchNormalization", 5).node, {&x0, &scale, &bias, &mean, &var}).shape()),
            "0x3x2x2");
}

TEST(NnBatchNorm, TrainingModeUsesBatchStatistics) {
  // One channel, values 1 and 3: batch mean 2, variance 1; running outputs blend with momentum 0.5.
  Tensor x = make({1, 1, 2}, {1.f, 3.f}), one = make({1}, {1.f}), zero = make({1}, {0.f});
  Tensor m = make({1}, {4.f}), v = make({1}, {2.f});
  auto out = run(Op("BatchNormalization", 5, 3).i("training_mode", 1).f("momentum", 0.5f).f("epsilon", 0.f).node,
                 {&x, &one, &zero, &m, &v}, 15);
  expect_close(out[0], make({1, 1, 2}, {-1.f, 1.f}));
  expect_close(out[1], make({1}, {3.f}));
  expect_close(out[2], make({1}, {1.5f}));
}

TEST(NnBatchNorm, TrainingOutputsWithoutTrainingModeAndChannelMismatchAreErrors) {
  Tensor x = random_tensor({1, 3, 2, 2}, 10), p3 = random_tensor({3}, 11), p4 = random_tensor({4}, 12);
  expect_error(
      [&] {
        infer(Op("BatchNormalization", 5, 3, "bn_outs").node,
              std::vector<ir::TensorType>(5, ttype(DType::kFloat32, {1, 3})), 14);
      },
      ErrorCode::kUnsupported, "bn_outs", "training_mode=1");
  expect_error(
      [&] {
        run1(Op("BatchNormalization", 5, 1, "bn_c").node, {&x, &p4, &p3, &p3, &p3}, 15);
      },
      ErrorCode::kInvalidArgument, "bn_c", "scale");
  auto out = infer(Op("BatchNormalization", 5).node,
                   {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 3, 8, 8}), ttype(DType::kFloat32, {3}),
                    ttype(DType::kFloat32, {3}), ttype(DType::kFloat32, {3}), ttype(DType::kFloat32, {3})},
                   15);
  EXPECT_EQ(dims_string(out[0].shape), "batchx3x8x8");
}

// Normalizes each contiguous row of `len` elements (double precision).
std::vector<double> naive_normalize_rows(const Tensor& x, int64_t len, double eps) {
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t r = 0; r * len < x.numel(); ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < len; ++i) mean += x.data<float>()[r * len + i];
    mean /= len;
    for (int64_t i = 0; i < len; ++i) var += std::pow(x.data<float>()[r * len + i] - mean, 2);
    var /= len;
    for (int64_t i = 0; i < len; ++i) out[r * len + i] = (x.data<float>()[r * len + i] - mean) / std::sqrt(var + eps);
  }
  return out;
}

TEST(NnInstanceNorm, MatchesReference) {
  Tensor x = random_tensor({2, 3, 5, 4}, 20), scale = random_tensor({3}, 21), bias = random_tensor({3}, 22);
  Tensor y = run1(Op("InstanceNormalization", 3).f("epsilon", 1e-4f).node, {&x, &scale, &bias});
  std::vector<double> z = naive_normalize_rows(x, 20, 1e-4);
  Tensor ref = Tensor::empty(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 20) % 3;
    ref.data<float>()[i] = static_cast<float>(z[i] * scale.data<float>()[c] + bias.data<float>()[c]);
  }
  expect_close(y, ref, 1e-4f, 1e-4f);
}

TEST(NnLayerNorm, AxisBiasAndStatOutputs) {
  Tensor x = random_tensor({2, 3, 8}, 30), scale = random_tensor({8}, 31), bias = random_tensor({8}, 32);
  std::vector<Tensor> out = run(Op("LayerNormalization", 3, 3).node, {&x, &scale, &bias}, 17);
  std::vector<double> z = naive_normalize_rows(x, 8, 1e-5);
  Tensor ref = Tensor::empty(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    ref.data<float>()[i] = static_cast<float>(z[i] * scale.data<float>()[i % 8] + bias.data<float>()[i % 8]);
  expect_close(out[0], ref, 1e-4f, 1e-4f);
  EXPECT_EQ(shape_to_string(out[1].shape()), "2x3x1");
  EXPECT_EQ(shape_to_string(out[2].shape()), "2x3x1");
  double mean0 = 0.0;
  for (int i = 0; i < 8; ++i) mean0 += x.data<float>()[i];
  EXPECT_NEAR(out[1].data<float>()[0], mean0 / 8, 1e-6);
  // axis = -2 (normalise the last two dims), no bias, Scale broadcast from [1, 8].
  Tensor scale2 = random_tensor({1, 8}, 33);
  Tensor y2 = run1(Op("LayerNormalization", 3).i("axis", -2).f("epsilon", 1e-3f).omit_input(2).node,
                   {&x, &scale2, nullptr}, 17);
  std::vector<double> z2 = naive_normalize_rows(x, 24, 1e-3);
  for (int64_t i = 0; i < x.numel(); ++i)
    ref.data<float>()[i] = static_cast<float>(z2[i] * scale2.data<float>()[i % 8]);
  expect_close(y2, ref, 1e-4f, 1e-4f);
}

TEST(NnLayerNorm, ShapeFunctionAndErrors) {
  auto out = infer(Op("LayerNormalization", 3, 3).node,
                   {ttype(DType::kFloat16, {ir::Dim::symbol("batch"), ir::Dim::symbol("seq"), 768}),
                    ttype(DType::kFloat16, {768}), ttype(DType::kFloat16, {768})},
                   17);
  EXPECT_EQ(dims_string(out[0].shape), "batchxseqx768");
  EXPECT_EQ(out[0].dtype, DType::kFloat16);
  EXPECT_EQ(dims_string(out[1].shape), "batchxseqx1");
  EXPECT_EQ(out[1].dtype, DType::kFloat32);
  Tensor x = random_tensor({2, 8}, 34), bad = random_tensor({7}, 35);
  expect_error(
      [&] {
        run1(Op("LayerNormalization", 2, 1, "ln").node, {&x, &bad}, 17);
      },
      ErrorCode::kInvalidArgument, "ln", "Scale");
  expect_error(
      [&] {
        run1(Op("LayerNormalization", 2, 1, "ln_axis").i("axis", 2).node, {&x, &bad}, 17);
      },
      ErrorCode::kInvalidModel, "ln_axis", "axis");
}

Tensor naive_group_norm(const Tensor& x, int64_t groups, const Tensor& scale, const Tensor& bias, bool per_channel,
                        double eps) {
  const int64_t c = x.dim(1), size = x.numel() / (x.dim(0) * c), len = c / groups * size;
  std::vector<double> z = naive_normalize_rows(x, len, eps);
  Tensor ref = Tensor::empty(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = (i / size) % c;
    const int64_t pi = per_channel ? ch : ch / (c / groups);
    ref.data<float>()[i] = static_cast<float>(z[i] * scale.data<float>()[pi] + bias.data<float>()[pi]);
  }
  return ref;
}

TEST(NnGroupNorm, Opset18PerGroupAndOpset21PerChannel) {
  Tensor x = random_tensor({2, 6, 3, 4}, 40);
  Tensor sg = random_tensor({3}, 41), bg = random_tensor({3}, 42);
  Tensor y18 = run1(Op("GroupNormalization", 3).i("num_groups", 3).node, {&x, &sg, &bg}, 18);
  expect_close(y18, naive_group_norm(x, 3, sg, bg, false, 1e-5), 1e-4f, 1e-4f);
  Tensor sc = random_tensor({6}, 43), bc = random_tensor({6}, 44);
  Tensor y21 = run1(Op("GroupNormalization", 3).i("num_groups", 2).f("epsilon", 1e-3f).node, {&x, &sc, &bc}, 21);
  expect_close(y21, naive_group_norm(x, 2, sc, bc, true, 1e-3), 1e-4f, 1e-4f);
  expect_error(
      [&] {
        run1(Op("GroupNormalization", 3, 1, "gn").i("num_groups", 4).node, {&x, &sc, &bc}, 21);
      },
      ErrorCode::kInvalidArgument, "gn", "num_groups");
  Tensor s4 = random_tensor({4}, 45);
  expect_error(
      [&] {
        run1(Op("GroupNormalization", 3, 1, "gn_s").i("num_groups", 2).node, {&x, &s4, &s4}, 21);
      },
      ErrorCode::kInvalidArgument, "gn_s", "scale");
}

TEST(NnLrn, MatchesFormula) {
  Tensor x = random_tensor({1, 5, 2, 3}, 50);
  const float alpha = 2e-2f, beta = 0.6f, bias = 1.5f;
  const int64_t size = 3;
  Tensor y = run1(Op("LRN", 1).i("size", size).f("alpha", alpha).f("beta", beta).f("bias", bias).node, {&x});
  Tensor ref = Tensor::empty(DType::kFloat32, x.shape());
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t i = 0; i < 6; ++i) {
      double sq = 0.0;
      for (int64_t j = std::max<int64_t>(0, c - 1); j <= std::min<int64_t>(4, c + 1); ++j)
        sq += std::pow(x.data<float>()[j * 6 + i], 2);
      ref.data<float>()[c * 6 + i] =
          static_cast<float>(x.data<float>()[c * 6 + i] / std::pow(bias + alpha / size * sq, beta));
    }
  expect_close(y, ref, 1e-5f, 1e-5f);
}

}  // namespace
}  // namespace kilnrt::ops::nn::testing
