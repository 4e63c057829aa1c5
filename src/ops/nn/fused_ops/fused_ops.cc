// CPU references of the small com.kilnrt fused ops made by the fusion passes: Gelu (fuse_gelu) and FusedMatMul
// (fuse_gemm_epilogue: MatMul + bias [+ GELU]).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

bool gelu_tanh(const ir::Node& n) {
  const std::string a = n.attr_string("approximate", std::string("none"));
  KILNRT_CHECK(a == "none" || a == "tanh", kInvalidModel, n.describe(),
               "approximate must be 'none' or 'tanh', got '" << a << "'");
  return a == "tanh";
}

inline float gelu(float xf, bool tanh_form) {
  const double x = xf;
  if (tanh_form) return static_cast<float>(0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
  return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
}

void infer_same(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape) ctx.set_output(0, x.dtype, x.shape);
  else ctx.set_output_rank_unknown(0, x.dtype);
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
  const int64_t k = a.shape().back(), m = a.numel() / std::max<int64_t>(k, 1);
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
    KILNRT_CHECK(b.numel() == n, kInvalidArgument, node.describe(), "bias has " << b.numel() << " elements, N is " << n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) yp[i * n + j] += b.data<float>()[j];
  }
  if (ctx.has_input(3)) {
    const Tensor r = to_float32(ctx.input(3), node, "residual");
    KILNRT_CHECK(r.shape() == os, kInvalidArgument, node.describe(),
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

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, "FusedMatMul", 1, 1000, infer_fused_matmul, fused_matmul_cpu,
                            float_dtypes(), "A W + bias [+ residual], then GELU or nothing (made by fuse_gemm_epilogue)"});

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
