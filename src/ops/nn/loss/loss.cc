// Loss ops (inference of the loss value): NegativeLogLikelihoodLoss (opset 12+) and SoftmaxCrossEntropyLoss (12+);
// also Hardmax (at the end).
// Both: input / scores of shape (N, C) or (N, C, d1, ..., dk), integer target of shape (N) / (N, d1, ..., dk),
// optional per-class weight (C), attributes reduction ("mean" default, "sum", "none") and ignore_index.
// "mean" divides by the sum of the weights of the non-ignored targets (their count without weights).
// Computed in double; float32 / float64 / float16 / bfloat16.
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"
#include "ops/shape/shape_util.h"

namespace kilnrt::ops::nn {
namespace {

void infer_loss(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const std::string reduction = ctx.node.attr_string("reduction", "mean");
  KILNRT_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": reduction '" << reduction << "' is not one of none/sum/mean");
  if (reduction == "none") {
    set_output_type(ctx, 0, x.dtype, input_shape(ctx, 1));
  } else {
    ctx.set_output(0, x.dtype, ir::SymShape{});
  }
  if (ctx.outputs.size() > 1) set_output_type(ctx, 1, x.dtype, input_shape(ctx, 0));  // log_prob
}

// loss from log-probabilities `logp` (N, C, inner...) laid out as n*C*inner + c*inner + j.
Tensor nll(const ir::Node& node, const std::vector<double>& logp, const Shape& xshape,
           const std::vector<int64_t>& target, const std::optional<std::vector<double>>& weight, DType dtype) {
  KILNRT_CHECK(xshape.size() >= 2, kInvalidArgument, node.describe(),
               node.op_type << ": input needs rank >= 2 (N, C, ...)");
  const int64_t n = xshape[0], c = xshape[1];
  int64_t inner = 1;
  Shape tshape = {n};
  for (size_t d = 2; d < xshape.size(); ++d) {
    inner *= xshape[d];
    tshape.push_back(xshape[d]);
  }
  KILNRT_CHECK(static_cast<int64_t>(target.size()) == n * inner, kInvalidArgument, node.describe(),
               node.op_type << ": target has " << target.size() << " elements, expected " << n * inner);
  if (weight)
    KILNRT_CHECK(static_cast<int64_t>(weight->size()) == c, kInvalidArgument, node.describe(),
                 node.op_type << ": weight has " << weight->size() << " elements for " << c << " classes");
  const bool has_ignore = node.has_attr("ignore_index");
  const int64_t ignore = has_ignore ? node.attr_int("ignore_index") : 0;
  std::vector<double> loss(static_cast<size_t>(n * inner));
  double wsum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t t = target[i * inner + j];
      double& l = loss[i * inner + j];
      if (has_ignore && t == ignore) {
        l = 0.0;
        continue;
      }
      KILNRT_CHECK(t >= 0 && t < c, kInvalidArgument, node.describe(),
                   node.op_type << ": target " << t << " is outside [0, " << c << ")");
      const double w = weight ? (*weight)[t] : 1.0;
      l = -logp[(i * c + t) * inner + j] * w;
      wsum += w;
    }
  }
  const std::string reduction = node.attr_string("reduction", "mean");
  if (reduction == "none") return tensor_from_doubles(loss, dtype, tshape);
  double sum = 0.0;
  for (double v : loss) sum += v;
  if (reduction == "mean") sum = wsum == 0.0 ? (sum == 0.0 ? 0.0 : sum / wsum) : sum / wsum;
  return tensor_from_doubles({sum}, dtype, Shape{});
}

void nll_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<std::vector<double>> weight;
  if (ctx.has_input(2)) weight = tensor_to_doubles(ctx.input(2), ctx.node);
  ctx.outputs[0] = nll(ctx.node, tensor_to_doubles(x, ctx.node), x.shape(), read_int_input(ctx, 1), weight, x.dtype());
}

void sce_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() >= 2, kInvalidArgument, ctx.node.describe(), "SoftmaxCrossEntropyLoss: scores need rank >= 2");
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / std::max<int64_t>(n * c, 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, v[(i * c + k) * inner + j]);
      double s = 0.0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(v[(i * c + k) * inner + j] - mx);
      const double lse = mx + std::log(s);
      for (int64_t k = 0; k < c; ++k) v[(i * c + k) * inner + j] -= lse;
    }
  }
  std::optional<std::vector<double>> weight;
  if (ctx.has_input(2)) weight = tensor_to_doubles(ctx.input(2), ctx.node);
  ctx.outputs[0] = nll(ctx.node, v, x.shape(), read_int_input(ctx, 1), weight, x.dtype());
  if (ctx.wants_output(1)) ctx.outputs[1] = tensor_from_doubles(v, x.dtype(), x.shape());
}

KILNRT_REGISTER_OP(OpSchema{"", "NegativeLogLikelihoodLoss", 12, 1000, infer_loss, nll_cpu, all_float_dtypes(),
                            "-input[n, target[n], ...] x weight, reduced by none/sum/mean (ignore_index)"});
KILNRT_REGISTER_OP(OpSchema{"", "SoftmaxCrossEntropyLoss", 12, 1000, infer_loss, sce_cpu, all_float_dtypes(),
                            "NLL of log-softmax(scores) along axis 1; optional log_prob output"});

}  // namespace
}  // namespace kilnrt::ops::nn

// ---- Hardmax (same axis rules as Softmax: opset < 13 coerces to 2-D at axis, default 1) -----------------------
namespace kilnrt::ops::nn {
namespace {

void hardmax_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool coerce = ctx.opset < 13;
  const int64_t rank = std::max(x.rank(), 1);
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", coerce ? 1 : -1), rank, ctx.node);
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis)
      outer *= x.dim(static_cast<int>(d));
    else if (d == axis || coerce)
      len *= x.dim(static_cast<int>(d));
    else
      inner *= x.dim(static_cast<int>(d));
  }
  const std::vector<double> v = tensor_to_doubles(x, ctx.node);
  std::vector<double> out(v.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < len; ++i)
        if (v[(o * len + i) * inner + j] > v[(o * len + best) * inner + j]) best = i;  // ties: the first
      if (len > 0) out[(o * len + best) * inner + j] = 1.0;
    }
  ctx.outputs[0] = tensor_from_doubles(out, x.dtype(), x.shape());
}

KILNRT_REGISTER_OP(OpSchema{
    "", "Hardmax", 1, 1000, [](ShapeContext& ctx) { set_output_type(ctx, 0, ctx.input(0).dtype, input_shape(ctx, 0)); },
    hardmax_cpu, all_float_dtypes(), "1 at the first max along axis, else 0 (opset < 13: over the dims from axis on)"});

}  // namespace
}  // namespace kilnrt::ops::nn
