// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool against naive 2-D references and hand-computed values.
#include <limits>

#include "ops/nn/nn_test_util.h"

namespace kilnrt::ops::nn::testing {
namespace {

struct PoolSpec {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  const int64_t span = in + pb + pe - (k - 1) * d - 1;
  int64_t out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// Naive 2-D pool; `is_max` selects max, otherwise average (count_include_pad counts positions inside the padded
// extent [-pb, in + pe)).
Tensor naive_pool_2d(const Tensor& x, const PoolSpec& p, bool is_max) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = pool_out(h, p.kernel[0], p.strides[0], p.pads[0], p.pads[2], p.dilations[0], p.ceil_mode);
  const int64_t ow = pool_out(w, p.kernel[1], p.strides[1], p.pads[1], p.pads[3], p.dilations[1], p.ceil_mode);
  Tensor y = Tensor::empty(DType::kFloat32, {n, c, oh, ow});
  for (int64_t nc = 0; nc < n * c; ++nc)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0.0;
        int64_t valid = 0, padded = 0;
        for (int64_t a = 0; a < p.kernel[0]; ++a)
          for (int64_t b = 0; b < p.kernel[1]; ++b) {
            const int64_t yy = i * p.strides[0] - p.pads[0] + a * p.dilations[0];
            const int64_t xx = j * p.strides[1] - p.pads[1] + b * p.dilations[1];
            if (yy >= -p.pads[0] && yy < h + p.pads[2] && xx >= -p.pads[1] && xx < w + p.pads[3]) ++padded;
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            const float v = x.data<float>()[(nc * h + yy) * w + xx];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        const int64_t count = p.count_include_pad ? padded : valid;
        y.data<float>()[(nc * oh + i) * ow + j] = is_max ? best : static_cast<float>(sum / count);
      }
  return y;
}

Op pool_op(const char* type, const PoolSpec& p) {
  Op op(type, 1, 1, "pool1");
  op.ints("kernel_shape", p.kernel).ints("strides", p.strides).ints("pads", p.pads).i("ceil_mode", p.ceil_mode);
  if (p.dilations != std::vector<int64_t>{1, 1}) op.ints("dilations", p.dilations);
  if (std::string(type) == "AveragePool") op.i("count_include_pad", p.count_include_pad);
  return op;
}

void check_pools(const Shape& xs, const PoolSpec& p, uint32_t seed) {
  Tensor x = random_tensor(xs, seed);
  expect_close(run1(pool_op("MaxPool", p).node, {&x}, 13), naive_pool_2d(x, p, true));
  if (p.dilations == std::vector<int64_t>{1, 1}) {
    expect_close(run1(pool_op("AveragePool", p).node, {&x}, 13), naive_pool_2d(x, p, false));
  }
  expect_close(run1(pool_op("AveragePool", p).node, {&x}, 19), naive_pool_2d(x, p, false));
}

TEST(NnPool, StridesPadsDilations) {
  check_pools({2, 3, 9, 10}, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}}, 1);
  check_pools({2, 4, 32, 33}, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}}, 4);  // large: OpenMP path
  check_pools({1, 2, 8, 7}, {{2, 3}, {1, 2}, {0, 1, 1, 0}, {1, 1}}, 2);
  check_pools({1, 2, 11, 9}, {{3, 2}, {2, 1}, {1, 0, 1, 1}, {2, 3}}, 3);
}

TEST(NnPool, CeilModeAndCountIncludePad) {
  PoolSpec p{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, false};
  check_pools({1, 3, 10, 10}, p, 10);  // 10 + 2 - 3 = 9 -> ceil(9/2)+1 = 6 windows
  p.count_include_pad = true;
  check_pools({1, 3, 10, 10}, p, 11);
  check_pools({2, 2, 6, 7}, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, true}, 12);
  // The last window must start inside the input or the begin pad: 5 + 1 - 2 = 4 -> ceil(4/3)+1 = 3 windows, but
  // the third would start at 2*3 - 1 = 5, past the input: dropped.
  Tensor x = random_tensor({1, 1, 5, 5}, 13);
  Tensor y = run1(Op("MaxPool", 1)
                      .ints("kernel_shape", {2, 2})
                      .ints("strides", {3, 3})
                      .ints("pads", {1, 1, 0, 0})
                      .i("ceil_mode", 1)
                      .node,
                  {&x});
  EXPECT_EQ(shape_to_string(y.shape()), "1x1x2x2");
}

TEST(NnPool, HandComputed) {
  Tensor x = make({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Op avg = Op("AveragePool", 1).ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  // Windows: [1], [2,3], [4,7], [5,6,8,9] (exclude pad).
  expect_close(run1(avg.node, {&x}), make({1, 1, 2, 2}, {1, 2.5f, 5.5f, 7}));
  avg.i("count_include_pad", 1);
  expect_close(run1(avg.node, {&x}), make({1, 1, 2, 2}, {0.25f, 1.25f, 2.75f, 7}));
  Op mx = Op("MaxPool", 1).ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  expect_close(run1(mx.node, {&x}), make({1, 1, 2, 2}, {1, 3, 7, 9}));
  // NaN propagates through max, wherever it sits in the window.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor xn = make({1, 1, 1, 4}, {nan, 1, 2, nan});
  Tensor yn = run1(Op("MaxPool", 1).ints("kernel_shape", {1, 2}).node, {&xn});
  EXPECT_TRUE(std::isnan(yn.data<float>()[0]));
  EXPECT_EQ(yn.data<float>()[1], 2.f);
  EXPECT_TRUE(std::isnan(yn.data<float>()[2]));
}

TEST(NnPool, AutoPadAndOneAndThreeDims) {
  Tensor x = random_tensor({1, 2, 7, 7}, 20);
  Op same = Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).s("auto_pad", "SAME_UPPER");
  Op expl = Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  expect_close(run1(same.node, {&x}), run1(expl.node, {&x}));
  Op lower = Op("AveragePool", 1).ints("kernel_shape", {2, 2}).s("auto_pad", "SAME_LOWER");
  Op lower_expl = Op("AveragePool", 1).ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 0, 0});
  expect_close(run1(lower.node, {&x}), run1(lower_expl.node, {&x}));
  // 1-D max pool by hand; 3-D average pool of a constant is the constant.
  Tensor x1 = make({1, 1, 5}, {3, 1, 4, 1, 5});
  expect_close(run1(Op("MaxPool", 1).ints("kernel_shape", {2}).node, {&x1}), make({1, 1, 4}, {3, 4, 4, 5}));
  Tensor x3 = Tensor::empty(DType::kFloat32, {1, 1, 4, 4, 4});
  for (int64_t i = 0; i < x3.numel(); ++i) x3.data<float>()[i] = 2.f;
  Tensor y3 = run1(Op("AveragePool", 1).ints("kernel_shape", {2, 2, 2}).ints("strides", {2, 2, 2}).node, {&x3});
  EXPECT_EQ(shape_to_string(y3.shape()), "1x1x2x2x2");
  for (float v : values(y3)) EXPECT_FLOAT_EQ(v, 2.f);
}

TEST(NnPool, MaxPoolIndices) {
  Tensor x = make({1, 2, 2, 3}, {1, 9, 2, 3, 4, 5, /**/ 6, 0, 7, 8, 1, 2});
  Op op = Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2});
  std::vector<Tensor> out = run(op.node, {&x});
  expect_close(out[0], make({1, 2, 1, 2}, {9, 9, 8, 7}));
  ASSERT_EQ(out[1].dtype(), DType::kInt64);
  std::vector<int64_t> idx(out[1].data<int64_t>(), out[1].data<int64_t>() + 4);
  EXPECT_EQ(idx, (std::vector<int64_t>{1, 1, 9, 8}));  // flat over N, C, H, W
  op.i("storage_order", 2);
  expect_error([&] { run(op.node, {&x}); }, ErrorCode::kInvalidModel, "node0", "storage_order");
}

// Flat index of a (d, h, w) position of plane `plane` in row-major or column-major spatial order.
int64_t flat_index(int64_t plane, const Shape& sp, int64_t d, int64_t h, int64_t w, bool column_major) {
  const int64_t size = sp[0] * sp[1] * sp[2];
  return plane * size + (column_major ? d + sp[0] * (h + sp[1] * w) : (d * sp[1] + h) * sp[2] + w);
}

// The value at every index of Indices is the pooled value, and the index is the one a naive 3-D window search
// finds (first maximum in d, h, w order), in both storage orders, for 1-D, 2-D and 3-D pools.
TEST(NnPool, MaxPoolIndicesStorageOrders) {
  // ONNX's maxpool_with_argmax_2d_precomputed_strides: 5x5 ramp, kernel 2, stride 2, column major.
  std::vector<float> ramp(25);
  for (int i = 0; i < 25; ++i) ramp[i] = static_cast<float>(i + 1);
  Tensor r = make({1, 1, 5, 5}, ramp);
  Op col = Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).i("storage_order", 1);
  std::vector<Tensor> out = run(col.node, {&r});
  expect_close(out[0], make({1, 1, 2, 2}, {7, 9, 17, 19}));
  EXPECT_EQ(std::vector<int64_t>(out[1].data<int64_t>(), out[1].data<int64_t>() + 4),
            (std::vector<int64_t>{6, 16, 8, 18}));
  struct Case {
    Shape x;
    std::vector<int64_t> k, s;
  };
  const Case cases[] = {{{2, 3, 7}, {3}, {2}}, {{2, 2, 5, 6}, {2, 3}, {2, 1}}, {{1, 2, 4, 3, 5}, {2, 2, 3}, {1, 1, 2}}};
  uint32_t seed = 50;
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.x, seed++);
    const int nd = static_cast<int>(c.x.size()) - 2;
    Shape sp(3, 1), k(3, 1), st(3, 1);
    for (int i = 0; i < nd; ++i) sp[3 - nd + i] = c.x[2 + i], k[3 - nd + i] = c.k[i], st[3 - nd + i] = c.s[i];
    for (int order = 0; order < 2; ++order) {
      Op op = Op("MaxPool", 1, 2).ints("kernel_shape", c.k).ints("strides", c.s).i("storage_order", order);
      std::vector<Tensor> o = run(op.node, {&x});
      const int64_t planes = c.x[0] * c.x[1];
      Shape os(3);
      for (int i = 0; i < 3; ++i) os[i] = (sp[i] - k[i]) / st[i] + 1;
      ASSERT_EQ(o[1].numel(), planes * os[0] * os[1] * os[2]);
      int64_t at = 0;
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t a = 0; a < os[0]; ++a)
          for (int64_t b = 0; b < os[1]; ++b)
            for (int64_t e = 0; e < os[2]; ++e, ++at) {
              float best = -1e30f;
              int64_t bi = -1;
              for (int64_t i = 0; i < k[0]; ++i)
                for (int64_t j = 0; j < k[1]; ++j)
                  for (int64_t l = 0; l < k[2]; ++l) {
                    const int64_t d = a * st[0] + i, h = b * st[1] + j, w = e * st[2] + l;
                    const float v = x.data<float>()[flat_index(p, sp, d, h, w, false)];
                    if (v > best) best = v, bi = flat_index(p, sp, d, h, w, order == 1);
                  }
              EXPECT_EQ(o[0].data<float>()[at], best);
              EXPECT_EQ(o[1].data<int64_t>()[at], bi) << "rank " << c.x.size() << " order " << order << " at " << at;
            }
    }
  }
}

// int8 / uint8 MaxPool: exact values, extremes survive, padding never wins, Indices as for float.
TEST(NnPool, MaxPoolEightBit) {
  Tensor xi = Tensor::empty(DType::kInt8, {1, 1, 2, 3});
  const int8_t vi[] = {-128, -5, 127, -1, -128, 3};
  std::copy(vi, vi + 6, xi.data<int8_t>());
  Op op = Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  std::vector<Tensor> o = run(op.node, {&xi});
  ASSERT_EQ(o[0].dtype(), DType::kInt8);
  ASSERT_EQ(shape_to_string(o[0].shape()), "1x1x2x2");
  // Windows (pad 1, stride 2): {-128}, {-5, 127}, {-1}, {-128, 3}: all-negative windows stay negative (no 0 pad).
  EXPECT_EQ(std::vector<int8_t>(o[0].data<int8_t>(), o[0].data<int8_t>() + 4), (std::vector<int8_t>{-128, 127, -1, 3}));
  EXPECT_EQ(std::vector<int64_t>(o[1].data<int64_t>(), o[1].data<int64_t>() + 4), (std::vector<int64_t>{0, 2, 3, 5}));
  Tensor xu = Tensor::empty(DType::kUInt8, {1, 2, 1, 4});
  const uint8_t vu[] = {0, 255, 7, 254, 1, 0, 0, 2};
  std::copy(vu, vu + 8, xu.data<uint8_t>());
  Tensor yu = run1(Op("MaxPool", 1).ints("kernel_shape", {1, 2}).node, {&xu});
  ASSERT_EQ(yu.dtype(), DType::kUInt8);
  EXPECT_EQ(std::vector<uint8_t>(yu.data<uint8_t>(), yu.data<uint8_t>() + 6),
            (std::vector<uint8_t>{255, 255, 254, 1, 0, 2}));
  // AveragePool has no 8-bit form in ONNX: a clear error naming the node.
  expect_error(
      [&] {
        run1(Op("AveragePool", 1, 1, "avg8").ints("kernel_shape", {1, 2}).node, {&xu});
      },
      ErrorCode::kUnsupported, "avg8", "uint8");
}

TEST(NnPool, GlobalPools) {
  Tensor x = random_tensor({2, 3, 4, 5}, 30);
  Tensor avg = run1(Op("GlobalAveragePool", 1).node, {&x});
  Tensor mx = run1(Op("GlobalMaxPool", 1).node, {&x});
  EXPECT_EQ(shape_to_string(avg.shape()), "2x3x1x1");
  for (int64_t p = 0; p < 6; ++p) {
    double sum = 0.0;
    float best = -1e30f;
    for (int64_t i = 0; i < 20; ++i) {
      sum += x.data<float>()[p * 20 + i];
      best = std::max(best, x.data<float>()[p * 20 + i]);
    }
    EXPECT_NEAR(avg.data<float>()[p], sum / 20, 1e-6);
    EXPECT_EQ(mx.data<float>()[p], best);
  }
  Tensor x1 = random_tensor({1, 2, 7}, 31);
  EXPECT_EQ(shape_to_string(run1(Op("GlobalAveragePool", 1).node, {&x1}).shape()), "1x2x1");
}

TEST(NnPool, EmptyBatchShapesAndErrors) {
  Tensor x0 = Tensor::empty(DType::kFloat32, {0, 3, 8, 8});
  Op mp = Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2});
  EXPECT_EQ(shape_to_string(run1(mp.node, {&x0}).shape()), "0x3x3x3");
  EXPECT_EQ(shape_to_string(run1(Op("GlobalAveragePool", 1).node, {&x0}).shape()), "0x3x1x1");
  auto out =
      infer(Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).node,
            {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 64, 112, 112})});
  EXPECT_EQ(dims_string(out[0].shape), "batchx64x56x56");
  auto gout = infer(Op("GlobalAveragePool", 1).node,
                    {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 512, ir::Dim::symbol("h"), 7})});
  EXPECT_EQ(dims_string(gout[0].shape), "batchx512x1x1");
  Tensor x2 = random_tensor({3, 4}, 40);
  expect_error([&] { run1(Op("MaxPool", 1, 1, "mp_rank").ints("kernel_shape", {2}).node, {&x2}); },
               ErrorCode::kInvalidArgument, "mp_rank", "rank");
  Tensor x4 = random_tensor({1, 1, 4, 4}, 41);
  expect_error([&] { run1(Op("AveragePool", 1, 1, "ap_k").node, {&x4}); }, ErrorCode::kInvalidModel, "ap_k",
               "kernel_shape");
  expect_error([&] { run1(Op("AveragePool", 1, 1, "ap_k1").ints("kernel_shape", {2}).node, {&x4}); },
               ErrorCode::kInvalidModel, "ap_k1", "kernel_shape");
}

}  // namespace
}  // namespace kilnrt::ops::nn::testing
