// com.kilnrt LayerNormalization, made by the fuse_layernorm pass (exports below opset 17).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void infer_same(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, x.dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, x.dtype);
}

// ---- LayerNormalization (fuse_layernorm, exports below opset 17): over the dims from `axis` on ----------------------
void layernorm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const Tensor x = to_float32(ctx.input(0), node, "X");
  KILNRT_CHECK(x.rank() >= 1, kInvalidArgument, node.describe(), "X must have rank >= 1");
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), x.rank(), node);
  const int64_t n = dims_product(x.shape(), axis, x.rank()), rows = n > 0 ? x.numel() / n : 0;
  const float eps = node.attr_float("epsilon", 1e-5f);
  Tensor scale, bias;
  if (ctx.has_input(1)) scale = to_float32(ctx.input(1), node, "Scale");
  if (ctx.has_input(2)) bias = to_float32(ctx.input(2), node, "B");
  for (const Tensor* t : {&scale, &bias})
    KILNRT_CHECK(!t->defined() || t->numel() == n, kInvalidArgument, node.describe(),
                 "scale / bias of shape " << shape_to_string(t->shape()) << " must have " << n << " elements");
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xp + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += row[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
    const double inv = 1.0 / std::sqrt(var / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      double v = (row[i] - mean) * inv;
      if (scale.defined()) v *= scale.data<float>()[i];
      if (bias.defined()) v += bias.data<float>()[i];
      yp[r * n + i] = static_cast<float>(v);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, "LayerNormalization", 1, 1000, infer_same, layernorm_cpu, float_dtypes(),
                            "LayerNormalization-17 with one output (made by fuse_layernorm)"});

}  // namespace
}  // namespace kilnrt::ops::nn
