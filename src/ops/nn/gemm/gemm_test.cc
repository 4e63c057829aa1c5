// Gemm and MatMul against naive triple loops.
#include <cmath>

#include "ops/nn/nn_test_util.h"

namespace kilnrt::ops::nn::testing {
namespace {

// y[i, j] = sum_k a[i, k] * b[k, j] for plain row-major matrices (a: m x k, b: k x n).
std::vector<float> naive_mm(const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  std::vector<float> y(static_cast<size_t>(m * n), 0.f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t q = 0; q < k; ++q) acc += static_cast<double>(a[i * k + q]) * b[q * n + j];
      y[i * n + j] = static_cast<float>(acc);
    }
  return y;
}

Tensor transpose2d(const Tensor& t) {
  Tensor r = Tensor::empty(DType::kFloat32, {t.dim(1), t.dim(0)});
  for (int64_t i = 0; i < t.dim(0); ++i)
    for (int64_t j = 0; j < t.dim(1); ++j) r.data<float>()[j * t.dim(0) + i] = t.data<float>()[i * t.dim(1) + j];
  return r;
}

void check_gemm(int64_t m, int64_t k, int64_t n, bool ta, bool tb, const Shape* c_shape, float alpha, float beta,
                uint32_t seed) {
  Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, seed);
  Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, seed + 1);
  Tensor c = c_shape ? random_tensor(*c_shape, seed + 2) : Tensor();
  Op op = Op("Gemm", c_shape ? 3 : 2).i("transA", ta).i("transB", tb).f("alpha", alpha).f("beta", beta);
  Tensor y = c_shape ? run1(op.node, {&a, &b, &c}) : run1(op.node, {&a, &b});
  Tensor a2 = ta ? transpose2d(a) : a, b2 = tb ? transpose2d(b) : b;
  std::vector<float> ref = naive_mm(a2.data<float>(), b2.data<float>(), m, k, n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float& r = ref[i * n + j];
      r *= alpha;
      if (c_shape) {
        const Shape& cs = *c_shape;
        const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
        r += beta * c.data<float>()[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
      }
    }
  expect_close(y, make({m, n}, ref), 1e-4f, 1e-4f);
}

TEST(NnGemm, TransposesAlphaBeta) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) check_gemm(5, 7, 3, ta, tb, nullptr, 1.f, 1.f, 10 + ta * 2 + tb);
  const Shape full = {5, 3};
  check_gemm(5, 7, 3, true, false, &full, 0.5f, 2.f, 20);
}

TEST(NnGemm, BroadcastC) {
  const Shape row = {1, 4}, col = {6, 1}, vec = {4}, scalar = {}, one = {1};
  check_gemm(6, 5, 4, false, true, &row, 1.f, 1.f, 30);
  check_gemm(6, 5, 4, false, false, &col, 1.f, 0.5f, 31);
  check_gemm(6, 5, 4, true, true, &vec, 2.f, 1.f, 32);
  check_gemm(6, 5, 4, false, false, &scalar, 1.f, 3.f, 33);
  check_gemm(6, 5, 4, false, false, &one, 1.f, -1.f, 34);
}

TEST(NnGemm, EmptyAndErrors) {
  const Shape c = {4};
  check_gemm(0, 5, 4, false, false, &c, 1.f, 1.f, 40);  // M = 0
  check_gemm(3, 0, 4, false, false, &c, 1.f, 1.f, 41);  // K = 0: Y = beta * C
  Tensor a = random_tensor({3, 4}, 42), b = random_tensor({5, 2}, 43);
  expect_error([&] { run1(Op("Gemm", 2, 1, "fc").node, {&a, &b}); }, ErrorCode::kInvalidArgument, "fc", "inner dims");
  Tensor a3 = random_tensor({1, 3, 4}, 44), b2 = random_tensor({4, 2}, 45);
  expect_error([&] { run1(Op("Gemm", 2, 1, "fc3").node, {&a3, &b2}); }, ErrorCode::kInvalidArgument, "fc3", "matrix");
  Tensor cbad = random_tensor({2, 2}, 46);
  expect_error(
      [&] {
        run1(Op("Gemm", 3, 1, "fcc").node, {&a, &b2, &cbad});
      },
      ErrorCode::kInvalidArgument, "fcc", "broadcast");
}

TEST(NnGemm, ShapeFunction) {
  auto out =
      infer(Op("Gemm", 3).i("transB", 1).node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), 512}),
                                                ttype(DType::kFloat32, {1000, 512}), ttype(DType::kFloat32, {1000})});
  EXPECT_EQ(dims_string(out[0].shape), "batchx1000");
}

// numpy-style reference: broadcasts batch dims by index arithmetic.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t r = std::max(as.size(), bs.size()) - 2;
  Shape batch(r);
  Shape ab(r, 1), bb(r, 1);
  for (size_t i = 0; i < as.size() - 2; ++i) ab[r - (as.size() - 2) + i] = as[i];
  for (size_t i = 0; i < bs.size() - 2; ++i) bb[r - (bs.size() - 2) + i] = bs[i];
  for (size_t i = 0; i < r; ++i) batch[i] = ab[i] == 1 ? bb[i] : ab[i];
  Shape ys = batch;
  if (!a1) ys.push_back(m);
  if (!b1) ys.push_back(n);
  Tensor y = Tensor::empty(DType::kFloat32, ys);
  const int64_t count = shape_numel(batch);
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t i = r; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      oa += (ab[i] == 1 ? 0 : idx) * sa;
      ob += (bb[i] == 1 ? 0 : idx) * sb;
      sa *= ab[i];
      sb *= bb[i];
    }
    std::vector<float> part = naive_mm(a.data<float>() + oa * m * k, b.data<float>() + ob * k * n, m, k, n);
    std::copy(part.begin(), part.end(), y.data<float>() + bi * m * n);
  }
  return y;
}

void check_matmul(const Shape& as, const Shape& bs, uint32_t seed, const std::string& expected_shape) {
  Tensor a = random_tensor(as, seed), b = random_tensor(bs, seed + 1);
  Tensor y = run1(Op("MatMul", 2).node, {&a, &b});
  EXPECT_EQ(shape_to_string(y.shape()), expected_shape);
  expect_close(y, naive_matmul(a, b), 1e-4f, 1e-4f);
}

TEST(NnMatMul, BatchedAndBroadcast) {
  check_matmul({3, 4}, {4, 5}, 50, "3x5");
  check_matmul({2, 3, 4}, {4, 5}, 51, "2x3x5");             // shared B: folded into one sgemm
  check_matmul({2, 3, 4}, {2, 4, 5}, 52, "2x3x5");          // same batch
  check_matmul({3, 4}, {2, 4, 5}, 53, "2x3x5");             // A broadcast
  check_matmul({2, 1, 3, 4}, {1, 3, 4, 2}, 54, "2x3x3x2");  // both broadcast
  check_matmul({1, 1, 3, 4}, {4, 2}, 55, "1x1x3x2");
  check_matmul({2, 1, 3, 4}, {1, 1, 4, 2}, 56, "2x1x3x2");  // B batch of ones
}

TEST(NnMatMul, OneDimensionalOperands) {
  check_matmul({4}, {4}, 60, "scalar");
  check_matmul({4}, {2, 4, 3}, 61, "2x3");
  check_matmul({2, 3, 4}, {4}, 62, "2x3");
  check_matmul({4}, {4, 3}, 63, "3");
  Tensor a = make({2}, {1, 2}), b = make({2, 2}, {3, 4, 5, 6});
  expect_close(run1(Op("MatMul", 2).node, {&a, &b}), make({2}, {13, 16}));
}

TEST(NnMatMul, EmptyDims) {
  check_matmul({0, 3, 4}, {4, 5}, 70, "0x3x5");
  check_matmul({3, 0}, {0, 5}, 71, "3x5");  // K = 0: zeros
  Tensor a = random_tensor({3, 0}, 72), b = random_tensor({0, 5}, 73);
  Tensor y = run1(Op("MatMul", 2).node, {&a, &b});
  for (float v : values(y)) EXPECT_EQ(v, 0.f);
}

TEST(NnMatMul, ShapeFunctionAndErrors) {
  auto out =
      infer(Op("MatMul", 2).node, {ttype(DType::kFloat32, {ir::Dim::symbol("batch"), ir::Dim::symbol("seq"), 768}),
                                   ttype(DType::kFloat32, {768, 3072})});
  EXPECT_EQ(dims_string(out[0].shape), "batchxseqx3072");
  auto out2 = infer(Op("MatMul", 2).node, {ttype(DType::kFloat32, {ir::Dim::symbol("b"), 12, 64, 32}),
                                           ttype(DType::kFloat32, {1, 12, 32, 64})});
  EXPECT_EQ(dims_string(out2[0].shape), "bx12x64x64");
  auto out3 = infer(Op("MatMul", 2).node, {ttype(DType::kFloat32, {5}), ttype(DType::kFloat32, {3, 5, 2})});
  EXPECT_EQ(dims_string(out3[0].shape), "3x2");
  Tensor a = random_tensor({2, 3, 4}, 80), b = random_tensor({3, 5}, 81), b3 = random_tensor({3, 4, 5}, 82);
  expect_error([&] { run1(Op("MatMul", 2, 1, "mm").node, {&a, &b}); }, ErrorCode::kInvalidArgument, "mm", "inner dims");
  expect_error(
      [&] {
        run1(Op("MatMul", 2, 1, "mmb").node, {&a, &b3});
      },
      ErrorCode::kInvalidArgument, "mmb", "broadcast");
  expect_error(
      [&] {
        infer(Op("MatMul", 2, 1, "mmi").node, {ttype(DType::kFloat32, {2, 3}), ttype(DType::kFloat32, {4, 5})});
      },
      ErrorCode::kInvalidArgument, "mmi", "inner dims");
}

// K = 0: the product is all zeros, so every output row is the bias (plus the residual, then the activation).
TEST(NnFusedMatMul, EmptyInnerDimGivesTheBiasInEveryRow) {
  Tensor a = random_tensor({2, 3, 0}, 90), w = random_tensor({0, 4}, 91);
  Tensor bias = make({4}, {1, -2, 3, 0.5f});
  Op op("FusedMatMul", 3);
  op.node.domain = "com.kilnrt";
  Tensor y = run1(op.node, {&a, &w, &bias});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(y.data<float>()[r * 4 + j], bias.data<float>()[j]) << r << "," << j;
  // trans_b, a residual and GELU.
  Tensor wt = random_tensor({4, 0}, 92), res = random_tensor({2, 3, 4}, 93);
  Op op2("FusedMatMul", 4);
  op2.node.domain = "com.kilnrt";
  op2.i("trans_b", 1).s("activation", "gelu");
  Tensor y2 = run1(op2.node, {&a, &wt, &bias, &res});
  ASSERT_EQ(y2.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) {
    const double x = double(bias.data<float>()[i % 4]) + res.data<float>()[i];
    EXPECT_NEAR(y2.data<float>()[i], 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))), 1e-5) << i;
  }
  // M = 0 stays empty.
  Tensor a0 = random_tensor({0, 0}, 94);
  EXPECT_EQ(run1(op.node, {&a0, &w, &bias}).shape(), (Shape{0, 4}));
}

TEST(NnGemm, EmptyInnerDimGivesBetaC) {
  Tensor a = random_tensor({3, 0}, 95), b = random_tensor({0, 2}, 96), c = make({2}, {4, -1});
  Tensor y = run1(Op("Gemm", 3).f("beta", 2.f).node, {&a, &b, &c});
  expect_close(y, make({3, 2}, {8, -2, 8, -2, 8, -2}));
}

}  // namespace
}  // namespace kilnrt::ops::nn::testing
