// Softmax and LogSoftmax (float32, float16, bfloat16; float64 in double). Opset 13+: along one axis (default -1).
// Opsets 1-12: the input is coerced to 2-D at `axis` (default 1) and normalised over the flattened trailing dims.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void infer_softmax(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  normalize_axis(ctx.node.attr_int("axis", ctx.opset >= 13 ? -1 : 1), rank == 0 ? 1 : rank, ctx.node);
  ctx.set_output(0, x.dtype, x.shape);
}

// Softmax of rows of length `len` with elements `inner` apart.
template <bool kLog>
void softmax_strided(const float* x, float* y, int64_t len, int64_t inner) {
  if (inner == 1) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len; ++i) mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    if (kLog) {
      for (int64_t i = 0; i < len; ++i) sum += std::exp(x[i] - mx);
      const float lse = mx + static_cast<float>(std::log(sum));
      for (int64_t i = 0; i < len; ++i) y[i] = x[i] - lse;
    } else {
      for (int64_t i = 0; i < len; ++i) {
        y[i] = std::exp(x[i] - mx);
        sum += y[i];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t i = 0; i < len; ++i) y[i] *= inv;
    }
    return;
  }
  std::vector<float> mx(static_cast<size_t>(inner), -std::numeric_limits<float>::infinity());
  std::vector<double> sum(static_cast<size_t>(inner), 0.0);
  for (int64_t i = 0; i < len; ++i) {
    const float* row = x + i * inner;
    for (int64_t j = 0; j < inner; ++j) mx[j] = row[j] > mx[j] ? row[j] : mx[j];
  }
  for (int64_t i = 0; i < len; ++i) {
    const float* row = x + i * inner;
    float* out = y + i * inner;
    for (int64_t j = 0; j < inner; ++j) {
      const float e = std::exp(row[j] - mx[j]);
      if (!kLog) out[j] = e;
      sum[j] += e;
    }
  }
  for (int64_t i = 0; i < len; ++i) {
    const float* row = x + i * inner;
    float* out = y + i * inner;
    for (int64_t j = 0; j < inner; ++j) {
      if (kLog) {
        out[j] = row[j] - mx[j] - static_cast<float>(std::log(sum[j]));
      } else {
        out[j] = static_cast<float>(out[j] / sum[j]);
      }
    }
  }
}

const std::vector<DType>& softmax_dtypes() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
  return v;
}

template <bool kLog>
void softmax_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const bool f64 = dtype == DType::kFloat64;
  Tensor x = f64 ? ctx.input(0) : to_float32(ctx.input(0), node, "input");
  const int64_t rank = x.rank();
  const bool coerce_2d = ctx.opset < 13;
  // A scalar is treated as one element along one axis.
  const int64_t axis = normalize_axis(node.attr_int("axis", coerce_2d ? 1 : -1), rank == 0 ? 1 : rank, node);
  int64_t outer = 1, len = 1, inner = 1;
  if (rank > 0) {
    outer = dims_product(x.shape(), 0, axis);
    if (coerce_2d) {
      len = dims_product(x.shape(), axis, rank);
    } else {
      len = x.dim(static_cast<int>(axis));
      inner = dims_product(x.shape(), axis + 1, rank);
    }
  }
  if (f64) {  // float64: computed in double, max-subtracted like the float path
    Tensor y = Tensor::empty(DType::kFloat64, x.shape());
    const double* xp = x.data<double>();
    double* yp = y.data<double>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        const double* xr = xp + o * len * inner + j;
        double* yr = yp + o * len * inner + j;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < len; ++i) mx = std::max(mx, xr[i * inner]);
        for (int64_t i = 0; i < len; ++i) sum += std::exp(xr[i * inner] - mx);
        for (int64_t i = 0; i < len; ++i)
          yr[i * inner] = kLog ? xr[i * inner] - mx - std::log(sum) : std::exp(xr[i * inner] - mx) / sum;
      }
    ctx.outputs[0] = y;
    return;
  }
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  if (x.numel() > 0) {
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
    for (int64_t o = 0; o < outer; ++o) {
      softmax_strided<kLog>(xp + o * len * inner, yp + o * len * inner, len, inner);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{"", "Softmax", 1, 1000, infer_softmax, softmax_cpu<false>, softmax_dtypes(),
                            "softmax along axis (opset < 13: over the dims from axis on)"});
KILNRT_REGISTER_OP(OpSchema{"", "LogSoftmax", 1, 1000, infer_softmax, softmax_cpu<true>, softmax_dtypes(),
                            "log-softmax along axis (opset < 13: over the dims from axis on)"});

}  // namespace
}  // namespace kilnrt::ops::nn
