// com.kilnrt FusedMatMul, made by the fuse_gemm_epilogue pass: MatMul + bias [+ residual] [+ GELU].
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/math/unary/gelu_reference.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// ---- FusedMatMul(A [..., K], W [K, N] (trans_b: [N, K]) [, bias [N] [, residual [..., N]]]) -> [..., N] -----------
// Y = act(A W + bias + residual); the residual (a tensor of Y's shape, e.g. a transformer's skip connection) is the
// GEMM's C operand with beta = 1 on CUDA.
void infer_fused_matmul(ShapeContext& ctx) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  if (!a.has_shape || !w.has_shape) {
    ctx.set_output_rank_unknown(0, a.dtype);
    return;
  }
  KILNRT_CHECK(a.shape.size() >= 2 && w.shape.size() == 2, kInvalidArgument, ctx.node.describe(),
               "A must have rank >= 2 and W rank 2");
  ir::SymShape out = a.shape;
  out.back() = w.shape[ctx.node.attr_int("trans_b", 0) != 0 ? 0 : 1];
  ctx.set_output(0, a.dtype, out);
}

void fused_matmul_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const Tensor a = to_float32(ctx.input(0), node, "A");
  const Tensor w = to_float32(ctx.input(1), node, "W");
  const bool tb = node.attr_int("trans_b", 0) != 0;
  KILNRT_CHECK(a.rank() >= 2 && w.rank() == 2, kInvalidArgument, node.describe(), "A must have rank >= 2 and W rank 2");
  // M from the leading dims, not numel / K: with K = 0 A has no elements but Y still has M rows (each the bias).
  const int64_t k = a.shape().back();
  int64_t m = 1;
  for (size_t d = 0; d + 1 < a.shape().size(); ++d) m *= a.shape()[d];
  const int64_t wk = tb ? w.dim(1) : w.dim(0), n = tb ? w.dim(0) : w.dim(1);
  KILNRT_CHECK(wk == k, kInvalidArgument, node.describe(),
               "inner dims differ: A " << shape_to_string(a.shape()) << ", W " << shape_to_string(w.shape()));
  Shape os = a.shape();
  os.back() = n;
  Tensor y = Tensor::zeros(DType::kFloat32, os);
  if (m > 0 && n > 0)
    sgemm(false, tb, m, n, k, 1.f, a.data<float>(), k, w.data<float>(), tb ? k : n, 0.f, y.data<float>(), n, node);
  float* yp = y.data<float>();
  if (ctx.has_input(2)) {
    const Tensor b = to_float32(ctx.input(2), node, "bias");
    KILNRT_CHECK(b.numel() == n, kInvalidArgument, node.describe(),
                 "bias has " << b.numel() << " elements, N is " << n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) yp[i * n + j] += b.data<float>()[j];
  }
  if (ctx.has_input(3)) {
    const Tensor r = to_float32(ctx.input(3), node, "residual");
    KILNRT_CHECK(
        r.shape() == os, kInvalidArgument, node.describe(),
        "residual of shape " << shape_to_string(r.shape()) << " differs from the output " << shape_to_string(os));
    const float* rp = r.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) yp[i] += rp[i];
  }
  const std::string act = node.attr_string("activation", std::string("none"));
  KILNRT_CHECK(act == "none" || act == "gelu", kInvalidModel, node.describe(), "unknown activation '" << act << "'");
  if (act == "gelu") {
    const bool t = gelu_tanh(node);
    for (int64_t i = 0; i < y.numel(); ++i) yp[i] = gelu(yp[i], t);
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, "FusedMatMul", 1, 1000, infer_fused_matmul, fused_matmul_cpu, float_dtypes(),
                            "A W + bias [+ residual], then GELU or nothing (made by fuse_gemm_epilogue)"});

}  // namespace
}  // namespace kilnrt::ops::nn
