// CUDA layer of com.kilnrt:FusedMatMul (made by passes/fuse_gemm_epilogue): A [..., K] x W [K, N] (or [N, K] with
// trans_b) + bias [+ residual: the C operand with beta = 1], then GELU, as ONE cuBLASLt call with an epilogue: BIAS,
// GELU_BIAS or GELU. cuBLASLt's GELU is
// the tanh approximation: it is used for approximate="tanh", and in 16-bit engines for the erf form too (the two
// differ by < 5e-4, under a quarter of an fp16 unit at the values where they differ most); a float32 engine with the
// erf form takes the BIAS epilogue and one GELU kernel in place. Float32 (strict or --tf32), float16, bfloat16.
#include "backends/cuda/cuda_layer.h"
#include "backends/cuda/cuda_libs.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

template <class T, class D>
struct Lt {  // RAII for one cuBLASLt descriptor
  T h = nullptr;
  D destroy;
  ~Lt() { if (h) destroy(h); }
};

std::string fused_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.domain != "com.kilnrt") return "FusedMatMul belongs to the com.kilnrt domain";
  if (n.inputs.size() < 2 || n.inputs.size() > 4) return "needs A, W, an optional bias and an optional residual";
  const DType dt = value_dtype(g, n.inputs[0]);
  if (dt != DType::kFloat32) return std::string("dtype ") + dtype_name(dt) + " (the graph's A must be float32)";
  if (!g.is_constant(n.inputs[1])) return "W must be a constant";
  const std::string act = n.attr_string("activation", std::string("none"));
  if (act != "none" && act != "gelu") return "activation '" + act + "'";
  return "";
}

class FusedMatMulLayer final : public CudaLayer {
 public:
  explicit FusedMatMulLayer(const ir::Node& n)
      : name_(n.describe()),
        precision_(node_precision(n)),
        trans_b_(n.attr_int("trans_b", 0) != 0),
        gelu_(n.attr_string("activation", std::string("none")) == "gelu"),
        tanh_(n.attr_string("approximate", std::string("none")) == "tanh") {}
  std::string tactic() const override {
    return std::string("cublaslt:matmul-epilogue-") + precision_name(precision_) +
           (precision_ == Precision::kFp16 || precision_ == Precision::kBf16 ? "-acc32" : "");
  }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& as = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    KILNRT_CHECK(as.size() >= 2 && ws.size() == 2, kInvalidArgument, name_, "A must have rank >= 2 and W rank 2");
    const int64_t kk = as.back(), m = kk > 0 ? l.inputs[0].numel() / kk : 0;
    const int64_t wk = trans_b_ ? ws[1] : ws[0], n = trans_b_ ? ws[0] : ws[1];
    KILNRT_CHECK(wk == kk, kInvalidArgument, name_,
                 "inner dims differ: A " << shape_to_string(as) << ", W " << shape_to_string(ws));
    if (m == 0 || n == 0) return;
    const DType st = l.inputs[0].dtype;
    KILNRT_CHECK(l.inputs[1].dtype == st && l.outputs[0].dtype == st, kUnsupported, name_,
                 "A, W and Y must share a storage dtype");
    const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
    if (has_bias)
      KILNRT_CHECK(l.inputs[2].numel() == n && l.inputs[2].dtype == st, kInvalidArgument, name_,
                   "bias must have N = " << n << " elements of A's dtype");
    const bool has_res = l.inputs.size() > 3 && l.inputs[3].present;
    if (has_res)
      KILNRT_CHECK(l.inputs[3].shape == l.outputs[0].shape && l.inputs[3].dtype == st, kInvalidArgument, name_,
                   "residual " << shape_to_string(l.inputs[3].shape) << " must have the output's shape "
                               << shape_to_string(l.outputs[0].shape) << " and dtype");
    const bool st16 = st == DType::kFloat16 || st == DType::kBFloat16;
    const bool lt_gelu = gelu_ && (tanh_ || st16);
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (has_bias) epi = lt_gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    else if (lt_gelu) epi = CUBLASLT_EPILOGUE_GELU;
    const cudaDataType_t t = st == DType::kFloat16 ? CUDA_R_16F : st == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute = precision_ == Precision::kTf32 && !st16 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                : CUBLAS_COMPUTE_32F;
    const CublasLtApi& api = cublaslt_api();
    cublasLtHandle_t handle = l.libs->get_cublaslt();
    Lt<cublasLtMatmulDesc_t, decltype(api.cublasLtMatmulDescDestroy)> desc{nullptr, api.cublasLtMatmulDescDestroy};
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescCreate(&desc.h, compute, CUDA_R_32F), name_);
    // Row-major Y[m,n] = A[m,k] W[k,n] is column-major Y^T = W^T A^T: cuBLAS's A is our W, its B our A.
    const cublasOperation_t op_w = trans_b_ ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = CUBLAS_OP_N;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof(op_w)), name_);
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)), name_);
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), name_);
    if (has_bias) {
      const void* bias = l.inputs[2].data;
      KILNRT_CUBLASLT_CHECK(
          api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), name_);
    }
    using Layout = Lt<cublasLtMatrixLayout_t, decltype(api.cublasLtMatrixLayoutDestroy)>;
    Layout lw{nullptr, api.cublasLtMatrixLayoutDestroy}, la{nullptr, api.cublasLtMatrixLayoutDestroy},
        ly{nullptr, api.cublasLtMatrixLayoutDestroy};
    if (trans_b_) KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&lw.h, t, kk, n, kk), name_);  // W [n,k] row-major
    else KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&lw.h, t, n, kk, n), name_);           // W [k,n] row-major
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&la.h, t, kk, m, kk), name_);
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&ly.h, t, n, m, n), name_);
    Lt<cublasLtMatmulPreference_t, decltype(api.cublasLtMatmulPreferenceDestroy)> pref{
        nullptr, api.cublasLtMatmulPreferenceDestroy};
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulPreferenceCreate(&pref.h), name_);
    const uint64_t wsb = l.workspace_bytes;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                   &wsb, sizeof(wsb)),
                          name_);
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulAlgoGetHeuristic(handle, desc.h, lw.h, la.h, ly.h, ly.h, pref.h, 1, &result,
                                                             &returned),
                          name_);
    KILNRT_CHECK(returned > 0, kCuda, name_,
                 "cuBLASLt found no algorithm for a " << m << "x" << n << "x" << kk << " GEMM with epilogue " << int(epi));
    const float alpha = 1.f, beta = has_res ? 1.f : 0.f;
    const void* c = has_res ? l.inputs[3].data : l.outputs[0].data;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmul(handle, desc.h, &alpha, l.inputs[1].data, lw.h, l.inputs[0].data, la.h,
                                             &beta, c, ly.h, l.outputs[0].data, ly.h, &result.algo,
                                             l.workspace, l.workspace_bytes, reinterpret_cast<cudaStream_t>(l.stream)),
                          name_);
    if (gelu_ && !lt_gelu)  // float32 erf GELU: exact, in place
      check_launch(k::unary(k::UnaryOp::kGeluErf, float_code(st), l.outputs[0].data, l.outputs[0].data, m * n, 0.f, 0.f,
                            l.stream),
                   name_, "gelu");
  }

 private:
  std::string name_;
  Precision precision_;
  bool trans_b_, gelu_, tanh_;
};

const LayerRegistrar kFusedMatMul({"FusedMatMul", fused_supports, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                                     return std::make_unique<FusedMatMulLayer>(a.node);
                                   }});

}  // namespace
}  // namespace kilnrt::backends::cuda
