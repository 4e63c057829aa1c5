// com.kilnrt Gelu, made by the fuse_gelu pass: x * Phi(x), exact or tanh form (ONNX's own Gelu, opset 20, is in
// unary.cc).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/math/unary/gelu_reference.h"
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

void gelu_cpu(CpuContext& ctx) {
  const bool t = gelu_tanh(ctx.node);
  const DType dtype = ctx.input(0).dtype();
  const Tensor x = to_float32(ctx.input(0), ctx.node, "X");
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) yp[i] = gelu(xp[i], t);
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, "Gelu", 1, 1000, infer_same, gelu_cpu, float_dtypes(),
                            "x*Phi(x), approximate none|tanh (made by fuse_gelu)"});

}  // namespace
}  // namespace kilnrt::ops::nn
