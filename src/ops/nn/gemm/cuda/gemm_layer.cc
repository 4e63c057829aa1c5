// CUDA layers on cuBLASLt: MatMul and Gemm (strict fp32: CUBLAS_COMPUTE_32F, bias epilogue for Gemm with a vector
// C; 16-bit engines: 16-bit operands, float32 compute; float64 MatMul on an own kernel).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ops/cuda/cuda_layer.h"
#include "cuda/cuda_libs.h"
#include "ops/nn/gemm/cuda/gemm_tactics.h"
#include "ops/nn/gemm/cuda/gemm_kernels.h"
#include "ops/nn/gemm/cuda/matmul_f64.h"
#include "ops/cuda/float32_layer_inputs.h"
#include "ops/cuda/lt_gemm.h"
#include "core/logging.h"
#include "cuda/driver_api.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// 16-bit copy of a constant float32 operand, uploaded once at load (nullptr when not applicable).
const void* weight_16(const LayerCreateArgs& a, size_t input, Precision p) {
  if (p != Precision::kFp16 && p != Precision::kBf16) return nullptr;
  if (a.node.inputs.size() <= input || !a.graph.is_constant(a.node.inputs[input])) return nullptr;
  const Tensor& w = a.graph.constants.at(a.node.inputs[input]);
  if (w.dtype() != DType::kFloat32) return nullptr;
  const bool bf = p == Precision::kBf16;
  if (const void* stored = a.weights.find(a.node.inputs[input] + (bf ? "#bf16" : "#fp16"))) return stored;
  if (!a.weights.has_host_data(a.node.inputs[input])) return nullptr;  // GPU-only constant: converted per call
  Tensor h = Tensor::empty(bf ? DType::kBFloat16 : DType::kFloat16, w.shape());
  const float* src = w.data<float>();
  uint16_t* dst = static_cast<uint16_t*>(h.raw());
  for (int64_t i = 0; i < w.numel(); ++i) dst[i] = bf ? float_to_bfloat16(src[i]) : float_to_half(src[i]);
  return a.weights.upload(a.node.inputs[input] + (bf ? "#bf16" : "#fp16"), h);
}

// Sets the operand types / compute type of `g` for precision `p`. 16-bit layers convert the float32 activations
// (and B when no 16-bit copy was made at load) into the front of the context workspace; cuBLASLt gets the rest.
// When they do not fit (huge activations), that call runs in float32.
void set_precision(GemmArgs& g, Precision p, int64_t a_numel, int64_t b_numel, const void* b16, LayerLaunch& l,
                   const std::string& name) {
  g.workspace = l.workspace;
  g.workspace_bytes = l.workspace_bytes;
  if (p == Precision::kTf32) g.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  const DType st = l.inputs[0].dtype;
  if (st == DType::kFloat16 || st == DType::kBFloat16) {
    // 16-bit storage (--fp16 / --bf16 engines): A, B, C, D are 16-bit as stored, no conversion; float32 compute.
    g.ab_type = g.c_type = st == DType::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
    return;
  }
  if (p != Precision::kFp16 && p != Precision::kBf16) return;
  auto al = [](size_t n) { return (n + 255) / 256 * 256; };
  const size_t a_bytes = al(size_t(a_numel) * 2), b_bytes = b16 ? 0 : al(size_t(b_numel) * 2);
  constexpr size_t kLtReserve = size_t(4) << 20;
  if (a_bytes + b_bytes + kLtReserve > l.workspace_bytes) return;  // float32 for this call
  const int bf = p == Precision::kBf16 ? 1 : 0;
  char* ws = static_cast<char*>(l.workspace);
  check_launch(k::f32_to_16(static_cast<const float*>(g.a), ws, a_numel, bf, l.stream), name, "f32_to_16");
  g.a = ws;
  if (b16) {
    g.b = b16;
  } else {
    check_launch(k::f32_to_16(static_cast<const float*>(g.b), ws + a_bytes, b_numel, bf, l.stream), name, "f32_to_16");
    g.b = ws + a_bytes;
  }
  g.ab_type = bf ? CUDA_R_16BF : CUDA_R_16F;
  g.workspace = ws + a_bytes + b_bytes;
  g.workspace_bytes = l.workspace_bytes - a_bytes - b_bytes;
}

std::string gemm_tactic(const char* what, Precision p) {
  return std::string("cublaslt:") + what + "-" + precision_name(p) +
         (p == Precision::kFp16 || p == Precision::kBf16 ? "-acc32" : "");
}

class MatMulLayer final : public CudaLayer {
 public:
  explicit MatMulLayer(const LayerCreateArgs& a)
      : name_(a.node.describe()),
        precision_(node_precision(a.node)),
        b16_(weight_16(a, 1, precision_)),
        io16_(value_dtype(a.graph, a.node.inputs.at(0))) {
    setup_gemm_tactic(a, gemm_storage(precision_), tactic_, [this](LayerLaunch& l) { enqueue(l); });  // timed algo
  }
  // "-fp16-io" / "-bf16-io": 16-bit model tensors (matmul_inputs) read and written as they are.
  std::string tactic() const override {
    if (io16_ == DType::kFloat64) return "kernel:matmul-f64";  // matmul_f64.cu
    const char* io = io16_ == DType::kFloat16 ? "-fp16-io" : io16_ == DType::kBFloat16 ? "-bf16-io" : "";
    return gemm_tactic("matmul", precision_) + io + tactic_.suffix();
  }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    Shape as = l.inputs[0].shape, bs = l.inputs[1].shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], kk = as.back(), n = bs.back();
    KILNRT_CHECK(bs[bs.size() - 2] == kk, kInvalidArgument, name_, "inner dimensions differ");
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t r = std::max(ab.size(), bb.size());
    Shape pa(r - ab.size(), 1), pb(r - bb.size(), 1);
    pa.insert(pa.end(), ab.begin(), ab.end());
    pb.insert(pb.end(), bb.begin(), bb.end());
    Shape ob(r);
    for (size_t d = 0; d < r; ++d) ob[d] = std::max(pa[d], pb[d]);
    const int64_t na = shape_numel(pa), nb = shape_numel(pb), no = shape_numel(ob);
    GemmArgs g;
    g.a = l.inputs[0].data;
    g.b = l.inputs[1].data;
    g.c = l.outputs[0].data;
    g.m = m;
    g.n = n;
    g.k = kk;
    if (no == 0) return;
    if (l.inputs[0].dtype == DType::kFloat64) {  // own double GEMM (matmul_f64.cu), numpy batch broadcasting
      KILNRT_CHECK(r <= static_cast<size_t>(k::kMaxDims), kUnsupported, name_,
                   "float64 MatMul with " << r << " batch dims (at most " << k::kMaxDims << ")");
      k::f64::MatMulBatch bt;
      bt.rank = static_cast<int>(r);
      int64_t step_a = m * kk, step_b = kk * n;
      for (int d = static_cast<int>(r) - 1; d >= 0; --d) {
        bt.dims[d] = ob[d];
        bt.a_strides[d] = pa[d] == 1 ? 0 : step_a;
        bt.b_strides[d] = pb[d] == 1 ? 0 : step_b;
        step_a *= pa[d];
        step_b *= pb[d];
      }
      check_launch(k::f64::matmul(static_cast<const double*>(g.a), static_cast<const double*>(g.b),
                                  static_cast<double*>(g.c), m, n, kk, bt, l.stream),
                   name_, "matmul_f64");
      return;
    }
    set_precision(g, precision_, l.inputs[0].numel(), l.inputs[1].numel(), b16_, l, name_);
    g.tactic = &tactic_;
    const int64_t es = g.ab_type == CUDA_R_32F ? 4 : 2;  // operand element size
    const int64_t ces = g.c_type == CUDA_R_32F ? 4 : 2;
    if (nb == 1) {  // weights shared by every batch: one tall GEMM
      g.m = m * na;
      lt_gemm(g, l, name_);
    } else if (na == 1 || pa == pb) {
      g.batch = no;
      g.stride_a = na == 1 ? 0 : m * kk;
      g.stride_b = kk * n;
      g.stride_c = m * n;
      lt_gemm(g, l, name_);
    } else {  // general broadcasting: one GEMM per output batch
      for (int64_t i = 0; i < no; ++i) {
        int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = static_cast<int>(r) - 1; d >= 0; --d) {
          const int64_t idx = rem % ob[d];
          rem /= ob[d];
          ia += (pa[d] == 1 ? 0 : idx) * sa;
          ib += (pb[d] == 1 ? 0 : idx) * sb;
          sa *= pa[d];
          sb *= pb[d];
        }
        GemmArgs gi = g;
        gi.a = static_cast<const char*>(g.a) + ia * m * kk * es;
        gi.b = static_cast<const char*>(g.b) + ib * kk * n * es;
        gi.c = static_cast<char*>(g.c) + i * m * n * ces;
        lt_gemm(gi, l, name_);
      }
    }
  }

 private:
  std::string name_;
  Precision precision_;
  const void* b16_;
  DType io16_;
  GemmTactic tactic_;
};

class GemmLayer final : public CudaLayer {
 public:
  explicit GemmLayer(const LayerCreateArgs& a) : GemmLayer(a.node) {
    precision_ = node_precision(a.node);
    b16_ = weight_16(a, 1, precision_);
    setup_gemm_tactic(a, gemm_storage(precision_), tactic_, [this](LayerLaunch& l) { enqueue(l); });  // timed algo
  }
  explicit GemmLayer(const ir::Node& n)
      : name_(n.describe()),
        trans_a_(n.attr_int("transA", 0) != 0),
        trans_b_(n.attr_int("transB", 0) != 0),
        alpha_(n.attr_float("alpha", 1.f)),
        beta_(n.attr_float("beta", 1.f)) {}
  std::string tactic() const override { return gemm_tactic("gemm", precision_) + tactic_.suffix(); }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& as = l.inputs[0].shape;
    const Shape& bs = l.inputs[1].shape;
    GemmArgs g;
    g.trans_a = trans_a_;
    g.trans_b = trans_b_;
    g.m = trans_a_ ? as[1] : as[0];
    g.k = trans_a_ ? as[0] : as[1];
    g.n = trans_b_ ? bs[0] : bs[1];
    g.a = l.inputs[0].data;
    g.b = l.inputs[1].data;
    g.c = l.outputs[0].data;
    g.alpha = alpha_;
    const bool st16 = l.outputs[0].dtype != DType::kFloat32;
    const bool has_c = l.inputs.size() > 2 && l.inputs[2].present && beta_ != 0.f;
    if (has_c) {
      const Shape& cs = l.inputs[2].shape;
      const bool vector = shape_numel(cs) == g.n && (cs.size() == 1 || (cs.size() == 2 && cs[0] == 1));
      if (vector && beta_ == 1.f && g.n > 0) {
        g.bias = l.inputs[2].data;
      } else if (st16) {
        // 16-bit storage: C broadcast into D by a strided copy, then D = alpha*AB + beta*D.
        const Shape ys = l.outputs[0].shape;
        const k::Broadcast3 bc = make_broadcast(ys, {ys, cs});
        k::Strided sc;
        sc.rank = bc.rank;
        for (int d = 0; d < bc.rank; ++d) {
          sc.dims[d] = bc.dims[d];
          sc.out_strides[d] = bc.s0[d];
          sc.in_strides[d] = bc.s1[d];
        }
        if (bc.contiguous_same) {
          sc.rank = 1;
          sc.dims[0] = shape_numel(ys);
          sc.out_strides[0] = sc.in_strides[0] = 1;
        }
        check_launch(k::strided_copy(g.c, l.inputs[2].data, sc, 2, l.stream), name_, "strided_copy");
        g.beta = beta_;
      } else {
        const Shape ys = l.outputs[0].shape;
        const k::Broadcast3 bc = make_broadcast(ys, {ys, cs});
        check_launch(k::broadcast_scale_f32(static_cast<const float*>(l.inputs[2].data), static_cast<float*>(g.c),
                                            shape_numel(ys), bc, beta_, l.stream),
                     name_, "broadcast_scale");
        g.beta = 1.f;
      }
    }
    KILNRT_CHECK(g.k > 0, kUnsupported, name_, "Gemm with an empty inner dimension (K == 0)");
    if (g.m == 0 || g.n == 0) return;
    set_precision(g, precision_, l.inputs[0].numel(), l.inputs[1].numel(), b16_, l, name_);
    g.tactic = &tactic_;
    lt_gemm(g, l, name_);
  }

 private:
  std::string name_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  Precision precision_ = Precision::kFp32;
  const void* b16_ = nullptr;
  GemmTactic tactic_;
};

// MatMul also takes float16 / bfloat16 model tensors natively (A, B, Y of one 16-bit type: cuBLASLt with float32
// compute, as in 16-bit engines, see set_precision), in any engine, instead of a float32 island.
std::string matmul_inputs(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() == 2 && n.outputs.size() == 1 && value_dtype(g, n.inputs[0]) == DType::kFloat64) {
    // float64: A, B, Y all float64, own double GEMM (MatMulLayer's float64 branch).
    if (value_dtype(g, n.inputs[1]) != DType::kFloat64 || value_dtype(g, n.outputs[0]) != DType::kFloat64)
      return "float64 A needs float64 B and Y";
    return "";
  }
  if (n.inputs.size() == 2 && n.outputs.size() == 1 && node_precision(n) != Precision::kTf32) {
    const DType a = value_dtype(g, n.inputs[0]);
    if ((a == DType::kFloat16 || a == DType::kBFloat16) && value_dtype(g, n.inputs[1]) == a &&
        value_dtype(g, n.outputs[0]) == a)
      return "";
  }
  return float32_layer_inputs(n, g);
}

KILNRT_REGISTER_CUDA_LAYER({"MatMul"}, matmul_inputs, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<MatMulLayer>(a);
});
KILNRT_REGISTER_CUDA_LAYER({"Gemm"}, float32_layer_inputs, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<GemmLayer>(a);
});

}  // namespace
}  // namespace kilnrt::backends::cuda
