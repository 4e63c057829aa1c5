// CUDA layer of com.kilnrt:FusedMatMul (made by passes/fuse_gemm_epilogue): A [..., K] x W [K, N] (or [N, K] with
// trans_b) + bias [+ residual: the C operand with beta = 1], then GELU, as ONE cuBLASLt call (lt_gemm.h) with an
// epilogue: BIAS, GELU_BIAS or GELU, with the algorithm timed at build (gemm_tactics.h). cuBLASLt's GELU is
// the tanh approximation: it is used for approximate="tanh", and in 16-bit engines for the erf form too (the two
// differ by < 5e-4, under a quarter of an fp16 unit at the values where they differ most); a float32 engine with the
// erf form takes the BIAS epilogue and one GELU kernel in place. Float32 (strict or --tf32), float16, bfloat16.
#include "ops/cuda/cuda_layer.h"
#include "cuda/cuda_libs.h"
#include "ops/math/unary/cuda/unary_kernels.h"
#include "ops/nn/gemm/cuda/gemm_tactics.h"
#include "ops/nn/gemm/cuda/fused_matmul_layer.h"
#include "ops/cuda/lt_gemm.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string fused_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 2 || n.inputs.size() > 4) return "needs A, W, an optional bias and an optional residual";
  const DType dt = value_dtype(g, n.inputs[0]);
  if (dt != DType::kFloat32) return std::string("dtype ") + dtype_name(dt) + " (the graph's A must be float32)";
  if (!g.is_constant(n.inputs[1])) return "W must be a constant";
  const std::string act = n.attr_string("activation", std::string("none"));
  if (act != "none" && act != "gelu") return "activation '" + act + "'";
  return "";
}

}  // namespace

GemmArgs fused_matmul_args(const LayerLaunch& l, bool trans_b, bool lt_gelu, Precision precision,
                           const std::string& name) {
  const Shape& as = l.inputs[0].shape;
  const Shape& ws = l.inputs[1].shape;
  KILNRT_CHECK(as.size() >= 2 && ws.size() == 2, kInvalidArgument, name, "A must have rank >= 2 and W rank 2");
  const int64_t kk = as.back(), m = kk > 0 ? l.inputs[0].numel() / kk : 0;
  const int64_t wk = trans_b ? ws[1] : ws[0], n = trans_b ? ws[0] : ws[1];
  KILNRT_CHECK(wk == kk, kInvalidArgument, name,
               "inner dims differ: A " << shape_to_string(as) << ", W " << shape_to_string(ws));
  GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = kk;
  if (m == 0 || n == 0) return g;
  const DType st = l.inputs[0].dtype;
  KILNRT_CHECK(l.inputs[1].dtype == st && l.outputs[0].dtype == st, kUnsupported, name,
               "A, W and Y must share a storage dtype");
  const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
  if (has_bias)
    KILNRT_CHECK(l.inputs[2].numel() == n && l.inputs[2].dtype == st, kInvalidArgument, name,
                 "bias must have N = " << n << " elements of A's dtype");
  const bool has_res = l.inputs.size() > 3 && l.inputs[3].present;
  if (has_res)
    KILNRT_CHECK(l.inputs[3].shape == l.outputs[0].shape && l.inputs[3].dtype == st, kInvalidArgument, name,
                 "residual " << shape_to_string(l.inputs[3].shape) << " must have the output's shape "
                             << shape_to_string(l.outputs[0].shape) << " and dtype");
  const bool st16 = st == DType::kFloat16 || st == DType::kBFloat16;
  // Row-major Y[m,n] = A[m,k] op(W) + bias (+ residual as C with beta = 1), epilogue BIAS / GELU_BIAS / GELU.
  g.trans_b = trans_b;
  g.a = l.inputs[0].data;
  g.b = l.inputs[1].data;
  g.c = l.outputs[0].data;
  g.ab_type = g.c_type = st == DType::kFloat16 ? CUDA_R_16F : st == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  g.compute = precision == Precision::kTf32 && !st16 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  g.workspace = l.workspace;
  g.workspace_bytes = l.workspace_bytes;
  g.bias = has_bias ? l.inputs[2].data : nullptr;
  g.gelu = lt_gelu;
  if (has_res) {
    g.c_in = l.inputs[3].data;
    g.beta = 1.f;
  }
  return g;
}

namespace {

class FusedMatMulLayer final : public CudaLayer {
 public:
  explicit FusedMatMulLayer(const LayerCreateArgs& a)
      : name_(a.node.describe()),
        precision_(node_precision(a.node)),
        trans_b_(a.node.attr_int("trans_b", 0) != 0),
        gelu_(a.node.attr_string("activation", std::string("none")) == "gelu"),
        tanh_(a.node.attr_string("approximate", std::string("none")) == "tanh") {
    setup_gemm_tactic(a, gemm_storage(precision_), tactic_, [this](LayerLaunch& l) { enqueue(l); });
  }
  std::string tactic() const override {
    return std::string("cublaslt:matmul-epilogue-") + precision_name(precision_) +
           (precision_ == Precision::kFp16 || precision_ == Precision::kBf16 ? "-acc32" : "") + tactic_.suffix();
  }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const bool st16 = l.inputs[0].dtype == DType::kFloat16 || l.inputs[0].dtype == DType::kBFloat16;
    const bool lt_gelu = gelu_ && (tanh_ || st16);
    GemmArgs g = fused_matmul_args(l, trans_b_, lt_gelu, precision_, name_);
    if (g.m == 0 || g.n == 0) return;
    g.tactic = &tactic_;
    lt_gemm(g, l, name_);
    if (tactic_.mode == GemmTactic::Mode::kList) return;  // the tuner's listing: nothing ran
    if (gelu_ && !lt_gelu)                                // float32 erf GELU: exact, in place
      check_launch(k::unary(k::UnaryOp::kGeluErf, float_code(l.inputs[0].dtype), l.outputs[0].data, l.outputs[0].data,
                            g.m * g.n, 0.f, 0.f, l.stream),
                   name_, "gelu");
  }

 private:
  std::string name_;
  Precision precision_;
  bool trans_b_, gelu_, tanh_;
  GemmTactic tactic_;
};

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:FusedMatMul"}, fused_supports,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<FusedMatMulLayer>(a);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
