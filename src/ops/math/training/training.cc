// ai.onnx.preview.training optimizers (opset 1), deterministic: Adagrad, Momentum (standard / nesterov), Adam.
// Inputs R (learning rate), T (step count), then the tensors to optimize and their gradients and states; outputs
// the updated tensors and states. Formulas as in the ONNX operator spec; computed in double.
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

const char* kTraining = "ai.onnx.preview.training";

// Number of optimized tensors n for an op with `groups` groups of inputs after R and T.
int64_t group_size(const CpuContext& ctx, int64_t groups) {
  const int64_t rest = static_cast<int64_t>(ctx.num_inputs()) - 2;
  KILNRT_CHECK(rest > 0 && rest % groups == 0, kInvalidModel, ctx.node.describe(),
               "expected R, T and " << groups << " groups of equally many inputs, got " << ctx.num_inputs());
  return rest / groups;
}

// The gradient and state tensors of optimized tensor i must have its size, and the node must have an output for
// every result (a hostile model may give anything: the loops index them all with x's indices).
void check_group(const CpuContext& ctx, size_t x_size, std::initializer_list<size_t> sizes, size_t outputs_needed) {
  for (size_t s : sizes)
    KILNRT_CHECK(s == x_size, kInvalidModel, ctx.node.describe(),
                 "a gradient or state has " << s << " values, its optimized tensor " << x_size);
  KILNRT_CHECK(ctx.outputs.size() >= outputs_needed, kInvalidModel, ctx.node.describe(),
               "expected " << outputs_needed << " outputs, got " << ctx.outputs.size());
}

void adagrad_cpu(CpuContext& ctx) {
  const int64_t n = group_size(ctx, 3);
  const double r = tensor_to_doubles(ctx.input(0), ctx.node).at(0);
  const double t = static_cast<double>(tensor_to_int64s(ctx.input(1)).at(0));
  const double decay = ctx.node.attr_float("decay_factor", 0.f), eps = ctx.node.attr_float("epsilon", 1e-6f);
  const double norm = ctx.node.attr_float("norm_coefficient", 0.f);
  const double lr = r / (1 + t * decay);
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& xt = ctx.input(static_cast<size_t>(2 + i));
    std::vector<double> x = tensor_to_doubles(xt, ctx.node);
    const std::vector<double> g = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + n + i)), ctx.node);
    std::vector<double> h = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + 2 * n + i)), ctx.node);
    check_group(ctx, x.size(), {g.size(), h.size()}, static_cast<size_t>(2 * n));
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      h[k] += gr * gr;
      x[k] -= lr * gr / (std::sqrt(h[k]) + eps);
    }
    ctx.outputs[static_cast<size_t>(i)] = tensor_from_doubles(x, xt.dtype(), xt.shape());
    ctx.outputs[static_cast<size_t>(n + i)] = tensor_from_doubles(h, xt.dtype(), xt.shape());
  }
}

void momentum_cpu(CpuContext& ctx) {
  const int64_t n = group_size(ctx, 3);
  const double r = tensor_to_doubles(ctx.input(0), ctx.node).at(0);
  const int64_t t = tensor_to_int64s(ctx.input(1)).at(0);
  const double alpha = ctx.node.attr_float("alpha"), beta = ctx.node.attr_float("beta");
  const double norm = ctx.node.attr_float("norm_coefficient");
  const std::string mode = ctx.node.attr_string("mode");
  KILNRT_CHECK(mode == "standard" || mode == "nesterov", kInvalidModel, ctx.node.describe(),
               "mode must be standard or nesterov, got '" << mode << "'");
  const double b = t > 0 ? beta : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& xt = ctx.input(static_cast<size_t>(2 + i));
    std::vector<double> x = tensor_to_doubles(xt, ctx.node);
    const std::vector<double> g = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + n + i)), ctx.node);
    std::vector<double> v = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + 2 * n + i)), ctx.node);
    check_group(ctx, x.size(), {g.size(), v.size()}, static_cast<size_t>(2 * n));
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      v[k] = alpha * v[k] + b * gr;
      x[k] -= mode == "standard" ? r * v[k] : r * (gr + alpha * v[k]);
    }
    ctx.outputs[static_cast<size_t>(i)] = tensor_from_doubles(x, xt.dtype(), xt.shape());
    ctx.outputs[static_cast<size_t>(n + i)] = tensor_from_doubles(v, xt.dtype(), xt.shape());
  }
}

void adam_cpu(CpuContext& ctx) {
  const int64_t n = group_size(ctx, 4);
  const double r = tensor_to_doubles(ctx.input(0), ctx.node).at(0);
  const int64_t t = tensor_to_int64s(ctx.input(1)).at(0);
  const double alpha = ctx.node.attr_float("alpha", 0.9f), beta = ctx.node.attr_float("beta", 0.999f);
  const double eps = ctx.node.attr_float("epsilon", 1e-6f);
  const double norm = ctx.node.attr_float("norm_coefficient", 0.f);
  const double norm_post = ctx.node.attr_float("norm_coefficient_post", 0.f);
  const double td = static_cast<double>(t);
  const double lr = t > 0 ? r * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td)) : r;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& xt = ctx.input(static_cast<size_t>(2 + i));
    std::vector<double> x = tensor_to_doubles(xt, ctx.node);
    const std::vector<double> g = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + n + i)), ctx.node);
    std::vector<double> v = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + 2 * n + i)), ctx.node);
    std::vector<double> h = tensor_to_doubles(ctx.input(static_cast<size_t>(2 + 3 * n + i)), ctx.node);
    check_group(ctx, x.size(), {g.size(), v.size(), h.size()}, static_cast<size_t>(3 * n));
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      v[k] = alpha * v[k] + (1 - alpha) * gr;
      h[k] = beta * h[k] + (1 - beta) * gr * gr;
      x[k] = (1 - norm_post) * (x[k] - lr * v[k] / (std::sqrt(h[k]) + eps));
    }
    ctx.outputs[static_cast<size_t>(i)] = tensor_from_doubles(x, xt.dtype(), xt.shape());
    ctx.outputs[static_cast<size_t>(n + i)] = tensor_from_doubles(v, xt.dtype(), xt.shape());
    ctx.outputs[static_cast<size_t>(2 * n + i)] = tensor_from_doubles(h, xt.dtype(), xt.shape());
  }
}

// Output j has the type of optimized tensor (j mod n), n = (inputs - 2) / groups.
void infer_optimizer(ShapeContext& ctx, int64_t groups) {
  const int64_t n = (static_cast<int64_t>(ctx.num_inputs()) - 2) / groups;
  KILNRT_CHECK(n > 0, kInvalidModel, ctx.node.describe(), "too few inputs");
  for (size_t j = 0; j < ctx.outputs.size(); ++j) {
    if (ctx.node.outputs[j].empty()) continue;
    const ir::TensorType& x = ctx.input(static_cast<size_t>(2 + static_cast<int64_t>(j) % n));
    if (x.has_shape)
      ctx.set_output(j, x.dtype, x.shape);
    else
      ctx.set_output_rank_unknown(j, x.dtype);
  }
}

const std::vector<DType> kOptDtypes = {DType::kFloat32, DType::kFloat64};
KILNRT_REGISTER_OP(OpSchema{kTraining, "Adagrad", 1, 1000, [](ShapeContext& c) { infer_optimizer(c, 3); }, adagrad_cpu,
                            kOptDtypes, "Adagrad step (ai.onnx.preview.training)"});
KILNRT_REGISTER_OP(OpSchema{kTraining, "Momentum", 1, 1000, [](ShapeContext& c) { infer_optimizer(c, 3); },
                            momentum_cpu, kOptDtypes, "SGD with momentum, standard or nesterov (preview.training)"});
KILNRT_REGISTER_OP(OpSchema{kTraining, "Adam", 1, 1000, [](ShapeContext& c) { infer_optimizer(c, 4); }, adam_cpu,
                            kOptDtypes, "Adam step (ai.onnx.preview.training)"});

}  // namespace
}  // namespace kilnrt::ops
