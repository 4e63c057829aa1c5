// The CUDA layer of LinearAttention (all four update rules, GQA), on the kernel of linear_attention_kernels.h in the
// CPU reference's arithmetic. Float32; float16 / bfloat16 tensors run as float32 islands (float32_island.h), which
// round like the CPU reference does.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_kernel_io.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/linear_attention/cuda/linear_attention_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace float32_kernel_io;
namespace la = kilnrt::cuda::kernels::linatt;

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
  if (r->delta != has(n, 5))
    return "update_rule '" + rule + "' " + (r->delta ? "requires" : "forbids") + " the beta input";
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
    KILNRT_CHECK(
        ks == (Shape{a.batch, a.steps, hkv_ * a.dk}) && vs[0] == a.batch && vs[1] == a.steps && vs[2] % hkv_ == 0,
        kInvalidModel, name_,
        "key " << shape_to_string(ks) << " / value " << shape_to_string(vs) << " do not match query "
               << shape_to_string(qs));
    a.dv = vs[2] / hkv_;
    if (rule_.gating) {
      const Shape& d = l.inputs[4].shape;
      a.decay_last = d.size() == 3 ? d[2] : -1;
      KILNRT_CHECK(
          d.size() == 3 && d[0] == a.batch && d[1] == a.steps && (a.decay_last == hkv_ || a.decay_last == hkv_ * a.dk),
          kInvalidModel, name_, "decay " << shape_to_string(d) << " must be [B, T, kv_num_heads or kv_num_heads*d_k]");
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
                 "the recurrent state of one head (" << a.dk << " x " << a.dv
                                                     << " doubles) exceeds the CUDA workspace (" << l.workspace_bytes
                                                     << " bytes)");
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

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"LinearAttention"}, supports_linear_attention, factory<LinearAttentionLayer>());

}  // namespace kilnrt::backends::cuda
