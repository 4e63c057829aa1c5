// CUDA layers of ops the CPU reference gained for the onnx 1.23 node cases: LinearAttention (all four
// update rules, GQA), CausalConvWithState (optional bias / past_state, silu / swish), RMSNormalization (any axis,
// broadcast scale), LpNormalization (p 1 / 2) and CumProd (exclusive / reverse, axis on the device, float32 / float64
// / int32 / int64). Kernels: kernels/linatt.cu, in the CPU reference's arithmetic. The float layers take float32;
// float16 / bfloat16 tensors run as float32 islands (float32_island.h), which round like the CPU reference does.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/linatt.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace la = kilnrt::cuda::kernels::linatt;

bool has(const ir::Node& n, size_t i) { return n.inputs.size() > i && !n.inputs[i].empty(); }
bool has(const LayerLaunch& l, size_t i) { return l.inputs.size() > i && l.inputs[i].present; }
const float* f32_in(const LayerLaunch& l, size_t i) {
  return has(l, i) ? static_cast<const float*>(l.inputs[i].data) : nullptr;
}
float* f32_out(LayerLaunch& l, size_t i) {
  return l.outputs.size() > i && l.outputs[i].present ? static_cast<float*>(l.outputs[i].data) : nullptr;
}

// "" when every present input in `inputs` is float32 (or of unknown dtype), else the reason.
std::string float32_inputs(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (!has(n, i)) continue;
    const DType t = value_dtype(g, n.inputs[i]);
    if (t != DType::kUndefined && t != DType::kFloat32)
      return "input " + std::to_string(i) + " has dtype " + dtype_name(t) + " (the CUDA kernel takes float32)";
  }
  for (const std::string& o : n.outputs) {
    if (o.empty()) continue;
    const DType t = value_dtype(g, o);
    if (t != DType::kUndefined && t != DType::kFloat32)
      return "output '" + o + "' has dtype " + dtype_name(t) + " (the CUDA kernel writes float32)";
  }
  return "";
}

void check_float32(const LayerLaunch& l, const std::string& name) {
  for (size_t i = 0; i < l.inputs.size(); ++i)
    KILNRT_CHECK(!l.inputs[i].present || l.inputs[i].dtype == DType::kFloat32, kUnsupported, name,
                 "input " << i << " is " << dtype_name(l.inputs[i].dtype) << ", the CUDA kernel takes float32");
}

// ---- LinearAttention ------------------------------------------------------------------------------------------------
struct LinAttRule {
  bool gating = false, delta = false;
};
std::string parse_rule(const ir::Node& n, LinAttRule* r) {
  const std::string rule = n.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return "update_rule must be linear, gated, delta or gated_delta, got '" + rule + "'";
  r->gating = rule == "gated" || rule == "gated_delta";
  r->delta = rule == "delta" || rule == "gated_delta";
  if (r->gating != has(n, 4))
    return "update_rule '" + rule + "' " + (r->gating ? "requires" : "forbids") + " the decay input";
  if (r->delta != has(n, 5)) return "update_rule '" + rule + "' " + (r->delta ? "requires" : "forbids") + " the beta input";
  const int64_t hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
  if (!(hq > 0 && hkv > 0 && hq % hkv == 0))
    return "q_num_heads (" + std::to_string(hq) + ") must be a positive multiple of kv_num_heads (" +
           std::to_string(hkv) + ")";
  return "";
}

class LinearAttentionLayer final : public CudaLayer {
 public:
  explicit LinearAttentionLayer(const ir::Node& n)
      : name_(n.describe()), hq_(n.attr_int("q_num_heads", 0)), hkv_(n.attr_int("kv_num_heads", 0)) {
    const std::string why = parse_rule(n, &rule_);
    KILNRT_CHECK(why.empty(), kInvalidModel, name_, why);
    const float s = n.attr_float("scale", 0.f);
    scale_attr_ = s;
  }
  std::string tactic() const override { return "kernel:linear-attention-recurrent"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& qs = l.inputs[0].shape;
    const Shape& ks = l.inputs[1].shape;
    const Shape& vs = l.inputs[2].shape;
    KILNRT_CHECK(qs.size() == 3 && ks.size() == 3 && vs.size() == 3 && qs[2] % hq_ == 0, kInvalidModel, name_,
                 "query/key/value must be [B, T, heads * size]");
    la::LinearAttentionArgs a;
    a.batch = qs[0];
    a.steps = qs[1];
    a.hq = hq_;
    a.hkv = hkv_;
    a.dk = qs[2] / hq_;
    KILNRT_CHECK(ks == (Shape{a.batch, a.steps, hkv_ * a.dk}) && vs[0] == a.batch && vs[1] == a.steps &&
                     vs[2] % hkv_ == 0,
                 kInvalidModel, name_,
                 "key " << shape_to_string(ks) << " / value " << shape_to_string(vs) << " do not match query "
                        << shape_to_string(qs));
    a.dv = vs[2] / hkv_;
    if (rule_.gating) {
      const Shape& d = l.inputs[4].shape;
      a.decay_last = d.size() == 3 ? d[2] : -1;
      KILNRT_CHECK(d.size() == 3 && d[0] == a.batch && d[1] == a.steps &&
                       (a.decay_last == hkv_ || a.decay_last == hkv_ * a.dk),
                   kInvalidModel, name_,
                   "decay " << shape_to_string(d) << " must be [B, T, kv_num_heads or kv_num_heads*d_k]");
      a.decay = f32_in(l, 4);
    }
    if (rule_.delta) {
      const Shape& b = l.inputs[5].shape;
      a.beta_last = b.size() == 3 ? b[2] : -1;
      KILNRT_CHECK(b.size() == 3 && b[0] == a.batch && b[1] == a.steps && (a.beta_last == hkv_ || a.beta_last == 1),
                   kInvalidModel, name_, "beta " << shape_to_string(b) << " must be [B, T, kv_num_heads or 1]");
      a.beta = f32_in(l, 5);
    }
    if (has(l, 3)) {
      KILNRT_CHECK(l.inputs[3].shape == (Shape{a.batch, hkv_, a.dk, a.dv}), kInvalidModel, name_,
                   "past_state " << shape_to_string(l.inputs[3].shape) << " must be [" << a.batch << ", " << hkv_
                                 << ", " << a.dk << ", " << a.dv << "]");
      a.past = f32_in(l, 3);
    }
    a.q = f32_in(l, 0);
    a.k = f32_in(l, 1);
    a.v = f32_in(l, 2);
    a.y = f32_out(l, 0);
    a.present = f32_out(l, 1);
    a.scale = scale_attr_ == 0.f ? 1.0 / std::sqrt(static_cast<double>(a.dk)) : static_cast<double>(scale_attr_);
    const int64_t pairs = a.batch * hkv_;
    if (pairs == 0 || a.dv == 0) return;
    if (a.steps == 0 && !a.present) return;
    // The double state of as many (batch, kv head) pairs as the workspace holds, chunk after chunk.
    const int64_t per_pair = a.dk * a.dv * static_cast<int64_t>(sizeof(double));
    const int64_t fit = per_pair > 0 ? static_cast<int64_t>(l.workspace_bytes) / per_pair : pairs;
    KILNRT_CHECK(l.workspace && fit >= 1, kUnsupported, name_,
                 "the recurrent state of one head (" << a.dk << " x " << a.dv << " doubles) exceeds the CUDA workspace ("
                                                     << l.workspace_bytes << " bytes)");
    a.state = static_cast<double*>(l.workspace);
    for (int64_t p = 0; p < pairs; p += fit)
      check_launch(la::linear_attention(a, p, std::min(pairs, p + fit), l.stream), name_, "linear_attention");
  }

 private:
  std::string name_;
  int64_t hq_, hkv_;
  LinAttRule rule_;
  float scale_attr_ = 0.f;
};

std::string supports_linear_attention(const ir::Node& n, const ir::Graph& g) {
  LinAttRule r;
  if (std::string why = parse_rule(n, &r); !why.empty()) return why;
  if (!has(n, 0) || !has(n, 1) || !has(n, 2)) return "query, key and value are required";
  return float32_inputs(n, g, {0, 1, 2, 3, 4, 5});
}

// ---- CausalConvWithState ---------------------------------------------------------------------------------------------
class CausalConvLayer final : public CudaLayer {
 public:
  explicit CausalConvLayer(const ir::Node& n) : name_(n.describe()) {
    const std::string act = n.attr_string("activation", "none");
    KILNRT_CHECK(act == "none" || act == "silu" || act == "swish", kInvalidModel, name_,
                 "activation must be none, silu or swish, got '" << act << "'");
    silu_ = act != "none";
  }
  std::string tactic() const override { return "kernel:causal-conv-state"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    KILNRT_CHECK(xs.size() == 3, kInvalidModel, name_, "input must be [B, C, L], got " << shape_to_string(xs));
    la::CausalConvArgs a;
    a.batch = xs[0];
    a.channels = xs[1];
    a.length = xs[2];
    KILNRT_CHECK(ws.size() == 3 && ws[0] == a.channels && ws[1] == 1 && ws[2] >= 1, kInvalidModel, name_,
                 "weight must be [C, 1, K] with C = " << a.channels << ", got " << shape_to_string(ws));
    a.kernel = ws[2];
    if (has(l, 2)) {
      KILNRT_CHECK(l.inputs[2].numel() == a.channels, kInvalidModel, name_,
                   "bias has shape " << shape_to_string(l.inputs[2].shape) << ", expected [" << a.channels << "]");
      a.bias = f32_in(l, 2);
    }
    if (has(l, 3)) {
      KILNRT_CHECK(l.inputs[3].shape == (Shape{a.batch, a.channels, a.kernel - 1}), kInvalidModel, name_,
                   "past_state has shape " << shape_to_string(l.inputs[3].shape) << ", expected [" << a.batch << ", "
                                           << a.channels << ", " << a.kernel - 1 << "]");
      a.past = f32_in(l, 3);
    }
    a.x = f32_in(l, 0);
    a.w = f32_in(l, 1);
    a.y = f32_out(l, 0);
    a.present = f32_out(l, 1);
    a.silu = silu_;
    check_launch(la::causal_conv(a, l.stream), name_, "causal_conv");
  }

 private:
  std::string name_;
  bool silu_ = false;
};

std::string supports_causal_conv(const ir::Node& n, const ir::Graph& g) {
  const std::string act = n.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") return "activation must be none, silu or swish";
  if (!has(n, 0) || !has(n, 1)) return "input and weight are required";
  return float32_inputs(n, g, {0, 1, 2, 3});
}

// ---- RMSNormalization / LpNormalization ------------------------------------------------------------------------------
class RmsNormLayer final : public CudaLayer {
 public:
  explicit RmsNormLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)), eps_(n.attr_float("epsilon", 1e-5f)) {}
  std::string tactic() const override { return "kernel:rms-norm-row"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(!xs.empty(), kInvalidArgument, name_, "input X must have rank >= 1");
    const int64_t axis = ops::normalize_axis(axis_, static_cast<int64_t>(xs.size()), node_);
    const Shape norm(xs.begin() + axis, xs.end());
    KILNRT_CHECK(norm.size() <= static_cast<size_t>(la::kMaxNormDims), kUnsupported, name_,
                 "normalizing over " << norm.size() << " dims exceeds the CUDA kernel's limit of "
                                     << la::kMaxNormDims);
    const Shape& ss = l.inputs[1].shape;
    bool ok = ss.size() <= norm.size();
    la::RmsNormArgs a;
    a.norm_rank = static_cast<int>(norm.size());
    int64_t stride = 1;
    for (size_t i = 0; ok && i < norm.size(); ++i) {
      const size_t nd = norm.size() - 1 - i;
      a.norm_dims[nd] = norm[nd];
      if (i < ss.size()) {
        const int64_t d = ss[ss.size() - 1 - i];
        ok = d == 1 || d == norm[nd];
        a.scale_strides[nd] = d == 1 ? 0 : stride;
        stride *= d;
      }
    }
    KILNRT_CHECK(ok, kInvalidArgument, name_,
                 "scale of shape " << shape_to_string(ss) << " does not broadcast to " << shape_to_string(norm));
    a.len = shape_numel(norm);
    a.rows = a.len > 0 ? l.inputs[0].numel() / a.len : 0;
    a.x = f32_in(l, 0);
    a.scale = f32_in(l, 1);
    a.y = f32_out(l, 0);
    a.eps = eps_;
    check_launch(la::rms_norm(a, l.stream), name_, "rms_norm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_;
  double eps_;
};

class LpNormLayer final : public CudaLayer {
 public:
  explicit LpNormLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)), p_(n.attr_int("p", 2)) {
    KILNRT_CHECK(p_ == 1 || p_ == 2, kInvalidModel, name_, "p must be 1 or 2, got " << p_);
  }
  std::string tactic() const override { return "kernel:lp-norm"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(!xs.empty(), kInvalidArgument, name_, "input must have rank >= 1");
    const int64_t rank = static_cast<int64_t>(xs.size());
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
    check_launch(la::lp_norm(f32_in(l, 0), f32_out(l, 0), outer, xs[axis], inner, static_cast<int>(p_), l.stream),
                 name_, "lp_norm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_, p_;
};

// ---- CumProd ----------------------------------------------------------------------------------------------------------
int cumprod_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kFloat64: return 6;
    default: return -1;
  }
}

class CumProdLayer final : public CudaLayer {
 public:
  explicit CumProdLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), exclusive_(n.attr_int("exclusive", 0) != 0),
        reverse_(n.attr_int("reverse", 0) != 0) {}
  std::string tactic() const override { return "kernel:cumprod"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs[0];
    const LayerTensor& ax = l.inputs[1];
    const int code = cumprod_code(x.dtype);
    KILNRT_CHECK(code >= 0, kUnsupported, name_, "CumProd of " << dtype_name(x.dtype) << " has no CUDA kernel");
    KILNRT_CHECK(ax.dtype == DType::kInt64 || ax.dtype == DType::kInt32, kInvalidModel, name_,
                 "axis must be int32 / int64, got " << dtype_name(ax.dtype));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILNRT_CHECK(rank >= 1, kInvalidModel, name_, "CumProd: input must have rank >= 1");
    KILNRT_CHECK(rank <= la::kMaxNormDims, kUnsupported, name_,
                 "rank " << rank << " exceeds the CUDA kernel's limit of " << la::kMaxNormDims);
    KILNRT_CHECK(ax.numel() == 1, kInvalidModel, name_, "axis must hold one value, got " << shape_to_string(ax.shape));
    if (ax.host) {  // a known axis (constant): out of range is the CPU reference's error
      const int64_t v = ax.dtype == DType::kInt64 ? ax.host->data<int64_t>()[0] : ax.host->data<int32_t>()[0];
      (void)ops::normalize_axis(v, rank, node_);
    }
    if (x.numel() == 0) return;
    check_launch(la::cumprod(x.data, l.outputs[0].data, ax.data, ax.dtype == DType::kInt64, static_cast<int>(rank),
                             x.shape.data(), exclusive_, reverse_, code, l.stream),
                 name_, "cumprod");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool exclusive_, reverse_;
};

std::string supports_cumprod(const ir::Node& n, const ir::Graph& g) {
  if (!has(n, 0) || !has(n, 1)) return "input and axis are required";
  const DType x = value_dtype(g, n.inputs[0]), a = value_dtype(g, n.inputs[1]);
  if (x != DType::kUndefined && cumprod_code(x) < 0)
    return std::string("dtype ") + dtype_name(x) + " of input 0 (the CUDA kernel takes float32 / float64 / int32 / int64)";
  if (a != DType::kUndefined && a != DType::kInt64 && a != DType::kInt32) return "axis must be int32 / int64";
  return "";
}

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    r.add({"LinearAttention", supports_linear_attention, factory<LinearAttentionLayer>()});
    r.add({"CausalConvWithState", supports_causal_conv, factory<CausalConvLayer>()});
    r.add({"RMSNormalization",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (!has(n, 0) || !has(n, 1)) return "X and scale are required";
             return float32_inputs(n, g, {0, 1});
           },
           factory<RmsNormLayer>()});
    r.add({"LpNormalization",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             const int64_t p = n.attr_int("p", 2);
             if (p != 1 && p != 2) return "p must be 1 or 2";
             return float32_inputs(n, g, {0});
           },
           factory<LpNormLayer>()});
    r.add({"CumProd", supports_cumprod, factory<CumProdLayer>()});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
