// Det (opset 11: LU with partial pivoting over the last two dims, batched) and MeanVarianceNormalization (9, 13:
// (x - mean) / (std + 1e-9) over `axes`, ONNX's function body).
#include <cmath>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

void det_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() >= 2 && x.shape()[x.rank() - 1] == x.shape()[x.rank() - 2], kInvalidArgument,
               ctx.node.describe(), "input must be [..., M, M], got " << shape_to_string(x.shape()));
  const int64_t m = x.shape().back();
  const Shape out(x.shape().begin(), x.shape().end() - 2);
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  const int64_t batch = m > 0 ? static_cast<int64_t>(v.size()) / (m * m) : 1;
  std::vector<double> det(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    double* a = v.data() + b * m * m;
    double d = 1;
    for (int64_t c = 0; c < m && d != 0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
      if (a[p * m + c] == 0) {
        d = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[p * m + k], a[c * m + k]);
        d = -d;
      }
      d *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / a[c * m + c];
        for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
      }
    }
    det[static_cast<size_t>(b)] = d;
  }
  ctx.outputs[0] = tensor_from_doubles(det, x.dtype(), out);
}

void infer_det(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape || x.shape.size() < 2) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  ctx.set_output(0, x.dtype, ir::SymShape(x.shape.begin(), x.shape.end() - 2));
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "Det",
                            11,
                            1000,
                            infer_det,
                            det_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16},
                            "determinant of the last two dims (LU, partial pivoting)"});

void mvn_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes = ctx.node.attr_ints("axes", std::vector<int64_t>{0, 2, 3});
  std::vector<char> reduced(static_cast<size_t>(x.rank()), 0);
  for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(a, x.rank(), ctx.node))] = 1;
  const Shape& s = x.shape();
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  // Group key of each element: its index with the reduced dims zeroed.
  std::vector<int64_t> key(v.size());
  std::vector<int64_t> idx(s.size(), 0);
  int64_t groups = 1, count = 1;
  for (size_t d = 0; d < s.size(); ++d) (reduced[d] ? count : groups) *= s[d];
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t k = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!reduced[d]) k = k * s[d] + idx[d];
    key[i] = k;
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    sum[static_cast<size_t>(key[i])] += v[i];
    sq[static_cast<size_t>(key[i])] += v[i] * v[i];
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const double mean = sum[static_cast<size_t>(key[i])] / static_cast<double>(count);
    const double var = sq[static_cast<size_t>(key[i])] / static_cast<double>(count) - mean * mean;
    v[i] = (v[i] - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9);
  }
  ctx.outputs[0] = tensor_from_doubles(v, x.dtype(), s);
}

void infer_same(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, x.dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, x.dtype);
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "MeanVarianceNormalization",
                            9,
                            1000,
                            infer_same,
                            mvn_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16},
                            "(x - mean) / (std + 1e-9) over axes (default 0, 2, 3)"});

}  // namespace
}  // namespace kilnrt::ops
