// Gemm (Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N]) and MatMul (numpy matmul: N-D batched with
// broadcast batch dims, 1-D operands), both on CBLAS sgemm; float64 MatMul as a plain double loop.
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// ---- Gemm ----------------------------------------------------------------------------------------------------

void check_gemm_c(const Shape& c, int64_t m, int64_t n, const ir::Node& node) {
  KILNRT_CHECK(c.size() <= 2, kInvalidArgument, node.describe(),
               "C of shape " << shape_to_string(c) << " must have rank <= 2");
  const int64_t cm = c.size() == 2 ? c[0] : 1;
  const int64_t cn = c.empty() ? 1 : c.back();
  const bool ok_m = cm == 1 || cm == m || cm < 0 || m < 0;
  const bool ok_n = cn == 1 || cn == n || cn < 0 || n < 0;
  KILNRT_CHECK(ok_m && ok_n, kInvalidArgument, node.describe(),
               "C of shape " << shape_to_string(c) << " does not broadcast to [" << m << ", " << n << "]");
}

void check_gemm_ab(const Shape& a, const Shape& b, bool trans_a, bool trans_b, const ir::Node& node) {
  KILNRT_CHECK(a.size() == 2, kInvalidArgument, node.describe(),
               "A must be a matrix, got shape " << shape_to_string(a));
  KILNRT_CHECK(b.size() == 2, kInvalidArgument, node.describe(),
               "B must be a matrix, got shape " << shape_to_string(b));
  const int64_t ka = trans_a ? a[0] : a[1];
  const int64_t kb = trans_b ? b[1] : b[0];
  KILNRT_CHECK(ka < 0 || kb < 0 || ka == kb, kInvalidArgument, node.describe(),
               "inner dims differ: A " << shape_to_string(a) << (trans_a ? " (transposed)" : "") << " and B "
                                       << shape_to_string(b) << (trans_b ? " (transposed)" : ""));
}

void infer_gemm(ShapeContext& ctx) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(1);
  const bool trans_a = ctx.node.attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node.attr_int("transB", 0) != 0;
  ir::SymShape out = {ir::Dim(), ir::Dim()};
  if (a.has_shape && b.has_shape) {
    check_gemm_ab(ir::sym_shape_to_shape(a.shape), ir::sym_shape_to_shape(b.shape), trans_a, trans_b, ctx.node);
  }
  if (a.has_shape) {
    KILNRT_CHECK(a.shape.size() == 2, kInvalidArgument, ctx.node.describe(),
                 "A must be a matrix, got shape " << ir::sym_shape_to_string(a.shape));
    out[0] = a.shape[trans_a ? 1 : 0];
  }
  if (b.has_shape) {
    KILNRT_CHECK(b.shape.size() == 2, kInvalidArgument, ctx.node.describe(),
                 "B must be a matrix, got shape " << ir::sym_shape_to_string(b.shape));
    out[1] = b.shape[trans_b ? 0 : 1];
  }
  if (ctx.has_input(2) && ctx.input(2).has_shape) {
    check_gemm_c(ir::sym_shape_to_shape(ctx.input(2).shape), out[0].value, out[1].value, ctx.node);
  }
  ctx.set_output(0, a.dtype, out);
}

void gemm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor a = to_float32(ctx.input(0), node, "A");
  Tensor b = to_float32(ctx.input(1), node, "B");
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.f);
  const float beta = node.attr_float("beta", 1.f);
  check_gemm_ab(a.shape(), b.shape(), trans_a, trans_b, node);
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  Tensor y = Tensor::empty(DType::kFloat32, {m, n});
  float* yp = y.data<float>();
  float gemm_beta = 0.f;
  if (ctx.has_input(2) && beta != 0.f) {
    Tensor c = to_float32(ctx.input(2), node, "C");
    check_gemm_c(c.shape(), m, n, node);
    const int64_t cm = c.rank() == 2 ? c.dim(0) : 1;
    const int64_t cn = c.rank() == 0 ? 1 : c.dim(-1);
    const float* cp = c.data<float>();
    for (int64_t i = 0; i < m; ++i) {
      const float* crow = cp + (cm == 1 ? 0 : i * cn);
      for (int64_t j = 0; j < n; ++j) yp[i * n + j] = crow[cn == 1 ? 0 : j];
    }
    gemm_beta = beta;
  }
  sgemm(trans_a, trans_b, m, n, k, alpha, a.data<float>(), a.dim(1), b.data<float>(), b.dim(1), gemm_beta, yp, n, node);
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{"", "Gemm", 7, 1000, infer_gemm, gemm_cpu, float_dtypes(),
                            "alpha * op(A) * op(B) + beta * C (transA, transB, C broadcast to [M, N])"});

// ---- MatMul --------------------------------------------------------------------------------------------------

struct MatMulDims {
  Shape batch_a, batch_b;  // batch dims of each operand
  int64_t m = 0, k = 0, n = 0;
  bool drop_m = false, drop_n = false;  // 1-D operands: the promoted dim is removed from the output
};

MatMulDims matmul_dims(const Shape& a, const Shape& b, const ir::Node& node) {
  KILNRT_CHECK(!a.empty() && !b.empty(), kInvalidArgument, node.describe(),
               "MatMul operands must have rank >= 1, got " << shape_to_string(a) << " and " << shape_to_string(b));
  MatMulDims d;
  d.drop_m = a.size() == 1;
  d.drop_n = b.size() == 1;
  d.m = d.drop_m ? 1 : a[a.size() - 2];
  d.k = a.back();
  const int64_t kb = d.drop_n ? b[0] : b[b.size() - 2];
  d.n = d.drop_n ? 1 : b.back();
  KILNRT_CHECK(d.k < 0 || kb < 0 || d.k == kb, kInvalidArgument, node.describe(),
               "inner dims differ: A " << shape_to_string(a) << " has " << d.k << " columns, B " << shape_to_string(b)
                                       << " has " << kb << " rows");
  if (a.size() > 2) d.batch_a.assign(a.begin(), a.end() - 2);
  if (b.size() > 2) d.batch_b.assign(b.begin(), b.end() - 2);
  return d;
}

void infer_matmul(ShapeContext& ctx) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(1);
  if (!a.has_shape || !b.has_shape) {
    ctx.set_output_rank_unknown(0, a.dtype);
    return;
  }
  MatMulDims d = matmul_dims(ir::sym_shape_to_shape(a.shape), ir::sym_shape_to_shape(b.shape), ctx.node);
  ir::SymShape ba, bb;
  if (a.shape.size() > 2) ba.assign(a.shape.begin(), a.shape.end() - 2);
  if (b.shape.size() > 2) bb.assign(b.shape.begin(), b.shape.end() - 2);
  ir::SymShape out = broadcast_sym_shapes(ba, bb, ctx.node);
  if (!d.drop_m) out.push_back(a.shape[a.shape.size() - 2]);
  if (!d.drop_n) out.push_back(b.shape.back());
  ctx.set_output(0, a.dtype, out);
}

// Row-major strides (in matrices) of `batch` right-aligned to `rank` dims, 0 where the dim broadcasts.
std::vector<int64_t> batch_strides(const Shape& batch, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t src = batch.size() - 1 - i, dst = rank - 1 - i;
    strides[dst] = batch[src] == 1 ? 0 : stride;
    stride *= batch[src];
  }
  return strides;
}

// float64 MatMul: a plain double loop (the reference; BLAS is used for the float types only).
Tensor matmul_f64(const Tensor& a, const Tensor& b, const ir::Node& node) {
  KILNRT_CHECK(b.dtype() == DType::kFloat64, kInvalidModel, node.describe(),
               "A is float64 but B is " << dtype_name(b.dtype()));
  MatMulDims d = matmul_dims(a.shape(), b.shape(), node);
  Shape batch = broadcast_shapes(d.batch_a, d.batch_b, node);
  Shape y_shape = batch;
  if (!d.drop_m) y_shape.push_back(d.m);
  if (!d.drop_n) y_shape.push_back(d.n);
  Tensor y = Tensor::empty(DType::kFloat64, y_shape);
  const int64_t m = d.m, k = d.k, n = d.n, batch_count = shape_numel(batch);
  const std::vector<int64_t> sa = batch_strides(d.batch_a, batch.size());
  const std::vector<int64_t> sb = batch_strides(d.batch_b, batch.size());
  const double* ap = a.data<double>();
  const double* bp = b.data<double>();
  double* yp = y.data<double>();
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t i = 0; i < batch_count; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t j = 0; j < batch.size(); ++j) {
      oa += idx[j] * sa[j];
      ob += idx[j] * sb[j];
    }
    const double* am = ap + oa * m * k;
    const double* bm = bp + ob * k * n;
    double* ym = yp + i * m * n;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0.0;
        for (int64_t t = 0; t < k; ++t) acc += am[r * k + t] * bm[t * n + c];
        ym[r * n + c] = acc;
      }
    for (size_t j = batch.size(); j-- > 0;) {
      if (++idx[j] < batch[j]) break;
      idx[j] = 0;
    }
  }
  return y;
}

void matmul_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  if (dtype == DType::kFloat64) {
    ctx.outputs[0] = matmul_f64(ctx.input(0), ctx.input(1), node);
    return;
  }
  Tensor a = to_float32(ctx.input(0), node, "A");
  Tensor b = to_float32(ctx.input(1), node, "B");
  MatMulDims d = matmul_dims(a.shape(), b.shape(), node);
  Shape batch = broadcast_shapes(d.batch_a, d.batch_b, node);
  Shape y_shape = batch;
  if (!d.drop_m) y_shape.push_back(d.m);
  if (!d.drop_n) y_shape.push_back(d.n);
  Tensor y = Tensor::empty(DType::kFloat32, y_shape);
  const int64_t m = d.m, k = d.k, n = d.n;
  const int64_t batch_count = shape_numel(batch);
  const int64_t b_batch_count = shape_numel(d.batch_b);
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  float* yp = y.data<float>();
  if (batch_count == 0 || m == 0 || n == 0) {
    ctx.outputs[0] = from_float32(y, dtype);
    return;
  }
  if (b_batch_count == 1 && shape_numel(d.batch_a) == batch_count) {
    // B is one matrix shared by every batch: fold A's batch into its rows, one sgemm.
    sgemm(false, false, batch_count * m, n, k, 1.f, ap, k, bp, n, 0.f, yp, n, node);
  } else {
    const std::vector<int64_t> sa = batch_strides(d.batch_a, batch.size());
    const std::vector<int64_t> sb = batch_strides(d.batch_b, batch.size());
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t i = 0; i < batch_count; ++i) {
      int64_t oa = 0, ob = 0;
      for (size_t j = 0; j < batch.size(); ++j) {
        oa += idx[j] * sa[j];
        ob += idx[j] * sb[j];
      }
      sgemm(false, false, m, n, k, 1.f, ap + oa * m * k, k, bp + ob * k * n, n, 0.f, yp + i * m * n, n, node);
      for (size_t j = batch.size(); j-- > 0;) {
        if (++idx[j] < batch[j]) break;
        idx[j] = 0;
      }
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "MatMul",
                            1,
                            1000,
                            infer_matmul,
                            matmul_cpu,
                            {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64},
                            "numpy matmul: batched with broadcast batch dims, 1-D operands"});

}  // namespace
}  // namespace kilnrt::ops::nn
