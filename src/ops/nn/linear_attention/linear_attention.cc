// ONNX LinearAttention (opset 27): recurrent linear attention with a [d_k, d_v] state per (batch, kv head).
//   query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv], past_state [B, Hkv, dk, dv]?,
//   decay [B, T, Hkv or Hkv*dk]? (log-space gate), beta [B, T, Hkv or 1]?
// Per step t: gated rules multiply the state rows by exp(decay); delta rules replace v by beta * (v - S^T k);
// S += k v^T; output (query head h reads kv head h / (Hq / Hkv)) = scale * S^T q, scale default 1/sqrt(dk).
// update_rule: linear | gated (decay) | delta (beta) | gated_delta (both; the default). chunk_size is a tuning
// hint without effect on the result. Outputs: [B, T, Hq*dv] and present_state. Math in double.
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void linear_attention_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  KILNRT_CHECK(rule == "linear" || rule == "gated" || rule == "delta" || rule == "gated_delta", kInvalidModel,
               node.describe(), "update_rule must be linear, gated, delta or gated_delta, got '" << rule << "'");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  KILNRT_CHECK(gating == ctx.has_input(4), kInvalidModel, node.describe(),
               "update_rule '" << rule << "' " << (gating ? "requires" : "forbids") << " the decay input");
  KILNRT_CHECK(delta == ctx.has_input(5), kInvalidModel, node.describe(),
               "update_rule '" << rule << "' " << (delta ? "requires" : "forbids") << " the beta input");
  const int64_t hq = node.attr_int("q_num_heads", 0), hkv = node.attr_int("kv_num_heads", 0);
  KILNRT_CHECK(hq > 0 && hkv > 0 && hq % hkv == 0, kInvalidModel, node.describe(),
               "q_num_heads (" << hq << ") must be a positive multiple of kv_num_heads (" << hkv << ")");
  Tensor q = to_float32(ctx.input(0), node, "query");
  Tensor k = to_float32(ctx.input(1), node, "key");
  Tensor v = to_float32(ctx.input(2), node, "value");
  const Shape& qs = q.shape();
  KILNRT_CHECK(qs.size() == 3 && k.rank() == 3 && v.rank() == 3 && qs[2] % hq == 0, kInvalidModel, node.describe(),
               "query/key/value must be [B, T, heads * size]");
  const int64_t batch = qs[0], steps = qs[1], dk = qs[2] / hq;
  KILNRT_CHECK(
      k.shape() == (Shape{batch, steps, hkv * dk}) && v.dim(0) == batch && v.dim(1) == steps && v.dim(2) % hkv == 0,
      kInvalidModel, node.describe(),
      "key " << shape_to_string(k.shape()) << " / value " << shape_to_string(v.shape()) << " do not match query "
             << shape_to_string(qs));
  const int64_t dv = v.dim(2) / hkv, group = hq / hkv;
  Tensor decay, beta, past;
  int64_t decay_last = 0, beta_last = 0;
  if (gating) {
    decay = to_float32(ctx.input(4), node, "decay");
    decay_last = decay.rank() == 3 ? decay.dim(2) : -1;
    KILNRT_CHECK(decay.rank() == 3 && decay.dim(0) == batch && decay.dim(1) == steps &&
                     (decay_last == hkv || decay_last == hkv * dk),
                 kInvalidModel, node.describe(),
                 "decay " << shape_to_string(decay.shape()) << " must be [B, T, kv_num_heads or kv_num_heads*d_k]");
  }
  if (delta) {
    beta = to_float32(ctx.input(5), node, "beta");
    beta_last = beta.rank() == 3 ? beta.dim(2) : -1;
    KILNRT_CHECK(
        beta.rank() == 3 && beta.dim(0) == batch && beta.dim(1) == steps && (beta_last == hkv || beta_last == 1),
        kInvalidModel, node.describe(),
        "beta " << shape_to_string(beta.shape()) << " must be [B, T, kv_num_heads or 1]");
  }
  DType state_dtype = dtype;
  std::vector<double> state(static_cast<size_t>(batch * hkv * dk * dv), 0.0);
  if (ctx.has_input(3)) {
    state_dtype = ctx.input(3).dtype();
    past = to_float32(ctx.input(3), node, "past_state");
    KILNRT_CHECK(past.shape() == (Shape{batch, hkv, dk, dv}), kInvalidModel, node.describe(),
                 "past_state " << shape_to_string(past.shape()) << " must be [" << batch << ", " << hkv << ", " << dk
                               << ", " << dv << "]");
    for (size_t i = 0; i < state.size(); ++i) state[i] = past.data<float>()[i];
  }
  const float scale_attr = node.attr_float("scale", 0.f);
  const double scale = scale_attr == 0.f ? 1.0 / std::sqrt(static_cast<double>(dk)) : scale_attr;
  Tensor y = Tensor::empty(DType::kFloat32, {batch, steps, hq * dv});
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  float* yp = y.data<float>();
  std::vector<double> vt(static_cast<size_t>(dv));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hkv; ++h) {
      double* s = state.data() + (b * hkv + h) * dk * dv;
      for (int64_t t = 0; t < steps; ++t) {
        const float* kt = kp + (b * steps + t) * hkv * dk + h * dk;
        const float* vsrc = vp + (b * steps + t) * hkv * dv + h * dv;
        for (int64_t m = 0; m < dv; ++m) vt[m] = vsrc[m];
        if (gating) {
          const float* g = decay.data<float>() + (b * steps + t) * decay_last;
          for (int64_t d = 0; d < dk; ++d) {
            const double f = std::exp(static_cast<double>(decay_last == hkv ? g[h] : g[h * dk + d]));
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= f;
          }
        }
        if (delta) {
          const double bt = beta.data<float>()[(b * steps + t) * beta_last + (beta_last == 1 ? 0 : h)];
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0.0;
            for (int64_t d = 0; d < dk; ++d) r += s[d * dv + m] * kt[d];
            vt[m] = bt * (vt[m] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += kt[d] * vt[m];
        for (int64_t j = 0; j < group; ++j) {
          const int64_t qh = h * group + j;
          const float* qt = qp + (b * steps + t) * hq * dk + qh * dk;
          float* yt = yp + (b * steps + t) * hq * dv + qh * dv;
          for (int64_t m = 0; m < dv; ++m) {
            double acc = 0.0;
            for (int64_t d = 0; d < dk; ++d) acc += qt[d] * s[d * dv + m];
            yt[m] = static_cast<float>(scale * acc);
          }
        }
      }
    }
  ctx.outputs[0] = from_float32(y, dtype);
  if (ctx.wants_output(1)) {
    Tensor present = Tensor::empty(DType::kFloat32, {batch, hkv, dk, dv});
    for (size_t i = 0; i < state.size(); ++i) present.data<float>()[i] = static_cast<float>(state[i]);
    ctx.outputs[1] = from_float32(present, state_dtype);
  }
}

void infer_linear_attention(ShapeContext& ctx) {
  const ir::TensorType& q = ctx.input(0);
  const ir::TensorType& k = ctx.input(1);
  const ir::TensorType& v = ctx.input(2);
  const int64_t hq = ctx.node.attr_int("q_num_heads", 0), hkv = ctx.node.attr_int("kv_num_heads", 0);
  KILNRT_CHECK(hq > 0 && hkv > 0, kInvalidModel, ctx.node.describe(), "q_num_heads and kv_num_heads are required");
  const bool shaped = q.has_shape && k.has_shape && v.has_shape && q.shape.size() == 3 && v.shape.size() == 3;
  const bool want_state = ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty();
  const DType state_dtype = ctx.has_input(3) ? ctx.input(3).dtype : q.dtype;
  if (!shaped) {
    ctx.set_output_rank_unknown(0, q.dtype);
    if (want_state) ctx.set_output_rank_unknown(1, state_dtype);
    return;
  }
  const ir::Dim dv = v.shape[2].known() ? ir::Dim(v.shape[2].value / hkv) : ir::Dim();
  const ir::Dim dk = q.shape[2].known() ? ir::Dim(q.shape[2].value / hq) : ir::Dim();
  ctx.set_output(0, q.dtype, {q.shape[0], q.shape[1], dv.known() ? ir::Dim(dv.value * hq) : ir::Dim()});
  if (want_state) ctx.set_output(1, state_dtype, {q.shape[0], ir::Dim(hkv), dk, dv});
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "LinearAttention", 27, 1000, infer_linear_attention, linear_attention_cpu,
                            float_dtypes(), "recurrent linear attention: linear / gated / delta / gated_delta state"});

}  // namespace kilnrt::ops::nn
