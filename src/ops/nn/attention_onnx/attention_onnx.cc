// ONNX Attention (opset 23; nonpad_kv_seqlen from 24; left/right_window_size from 25): the CPU reference.
//   inputs  Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?
//   outputs Y, present_key?, present_value?, qk_matmul_output?
// Q/K/V are 4-D [B, heads, seq, head_size] or 3-D [B, seq, heads * head_size] (then q_num_heads / kv_num_heads
// say how to split). Grouped-query attention: query head h reads KV head h / (q_heads / kv_heads).
// scores = (Q K^T) * scale (default 1/sqrt(head_size)); softcap > 0: softcap * tanh(scores / softcap), before the bias.
// The additive bias is the sum of: attn_mask (bool: true = attend -> 0, false -> -inf; float: added; broadcast
// right-aligned to [B, Hq, Sq, T]; a last dim shorter than T is padded with -inf), the causal mask (key j visible
// from query i iff j <= i + offset), the sliding window (offset + i - j in [-right, left] for each bound >= 0) and the
// padding of nonpad_kv_seqlen (keys j >= nonpad[b] hidden). offset = past length, or nonpad[b] - Sq with
// nonpad_kv_seqlen and no past, else 0. A query row whose bias is -inf everywhere gets all-zero probabilities (Y = 0).
// qk_matmul_output_mode: 0 and 1: the (softcapped) scaled scores; 2: scores + bias; 3: the probabilities.
// Math in double, as the oracle; I/O in the model's float dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct AttnDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, past = 0, head = 0, v_head = 0;
  bool three_d = false;
};

// Splits a [B, S, H*D] or [B, H, S, D] tensor into (heads, seq, head_size).
void split_dims(const ir::Node& node, const Shape& s, bool three_d, int64_t heads_attr, const char* name,
                int64_t* heads, int64_t* seq, int64_t* size) {
  if (three_d) {
    KILNRT_CHECK(heads_attr > 0 && s[2] % heads_attr == 0, kInvalidModel, node.describe(),
                 "3-D " << name << " of shape " << shape_to_string(s) << " needs q_num_heads / kv_num_heads that "
                        << "divide its last dim (got " << heads_attr << ")");
    *heads = heads_attr;
    *seq = s[1];
    *size = s[2] / heads_attr;
  } else {
    *heads = s[1];
    *seq = s[2];
    *size = s[3];
  }
}

// Element (b, h, t, d) of a 3-D [B, S, H*D] or 4-D [B, H, S, D] tensor.
inline int64_t qkv_index(bool three_d, int64_t heads, int64_t seq, int64_t size, int64_t b, int64_t h, int64_t t,
                         int64_t d) {
  return three_d ? ((b * seq + t) * heads + h) * size + d : ((b * heads + h) * seq + t) * size + d;
}

AttnDims attention_dims(const CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Shape& q = ctx.input(0).shape();
  const Shape& k = ctx.input(1).shape();
  const Shape& v = ctx.input(2).shape();
  KILNRT_CHECK((q.size() == 3 || q.size() == 4) && k.size() == q.size() && v.size() == q.size(), kInvalidModel,
               node.describe(),
               "Q, K and V must all be 3-D or all 4-D, got " << shape_to_string(q) << ", " << shape_to_string(k) << ", "
                                                             << shape_to_string(v));
  AttnDims d;
  d.three_d = q.size() == 3;
  d.batch = q[0];
  const int64_t qh = node.attr_int("q_num_heads", 0), kvh = node.attr_int("kv_num_heads", 0);
  int64_t k_heads = 0, v_heads = 0, v_seq = 0, k_head = 0;
  split_dims(node, q, d.three_d, qh, "Q", &d.q_heads, &d.q_seq, &d.head);
  split_dims(node, k, d.three_d, kvh, "K", &k_heads, &d.kv_seq, &k_head);
  split_dims(node, v, d.three_d, kvh, "V", &v_heads, &v_seq, &d.v_head);
  d.kv_heads = k_heads;
  KILNRT_CHECK(k[0] == d.batch && v[0] == d.batch && k_heads == v_heads && v_seq == d.kv_seq && k_head == d.head &&
                   d.kv_heads > 0 && d.q_heads % d.kv_heads == 0,
               kInvalidModel, node.describe(),
               "inconsistent Q/K/V shapes " << shape_to_string(q) << ", " << shape_to_string(k) << ", "
                                            << shape_to_string(v) << " (q heads must be a multiple of kv heads)");
  if (ctx.has_input(4) || ctx.has_input(5)) {
    KILNRT_CHECK(ctx.has_input(4) && ctx.has_input(5), kInvalidModel, node.describe(),
                 "past_key and past_value must be given together");
    const Shape& pk = ctx.input(4).shape();
    const Shape& pv = ctx.input(5).shape();
    KILNRT_CHECK(pk.size() == 4 && pv.size() == 4 && pk[0] == d.batch && pk[1] == d.kv_heads && pk[3] == d.head &&
                     pv[0] == d.batch && pv[1] == d.kv_heads && pv[2] == pk[2] && pv[3] == d.v_head,
                 kInvalidModel, node.describe(),
                 "past_key " << shape_to_string(pk) << " / past_value " << shape_to_string(pv)
                             << " do not match [B, kv_heads, past, head_size]");
    d.past = pk[2];
  }
  return d;
}

// The additive mask input as a function of (b, h, i, j), right-aligned broadcast, padded with -inf past its end.
struct MaskView {
  const Tensor* t = nullptr;           // float32 or bool
  std::vector<int64_t> dims, strides;  // 4 entries, right-aligned (missing leading dims: size 1)
  double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!t) return 0.0;
    if (j >= dims[3]) return kNegInf;
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int k = 0; k < 4; ++k) off += (dims[k] == 1 ? 0 : idx[k]) * strides[k];
    if (t->dtype() == DType::kBool) return t->data<bool>()[off] ? 0.0 : kNegInf;
    return t->data<float>()[off];
  }
};

MaskView make_mask(const CpuContext& ctx, const AttnDims& d, Tensor* storage) {
  MaskView m;
  if (!ctx.has_input(3)) return m;
  const Tensor& in = ctx.input(3);
  *storage = in.dtype() == DType::kBool ? in : to_float32(in, ctx.node, "attn_mask");
  const Shape& s = storage->shape();
  KILNRT_CHECK(s.size() >= 1 && s.size() <= 4, kInvalidModel, ctx.node.describe(),
               "attn_mask must have rank 1 to 4, got " << shape_to_string(s));
  m.t = storage;
  m.dims.assign(4, 1);
  for (size_t k = 0; k < s.size(); ++k) m.dims[4 - s.size() + k] = s[k];
  const int64_t want[3] = {d.batch, d.q_heads, d.q_seq};
  for (int k = 0; k < 3; ++k)
    KILNRT_CHECK(m.dims[k] == 1 || m.dims[k] == want[k], kInvalidModel, ctx.node.describe(),
                 "attn_mask of shape " << shape_to_string(s) << " does not broadcast to [" << d.batch << ", "
                                       << d.q_heads << ", " << d.q_seq << ", " << d.past + d.kv_seq << "]");
  KILNRT_CHECK(m.dims[3] <= d.past + d.kv_seq, kInvalidModel, ctx.node.describe(),
               "attn_mask's last dim " << m.dims[3] << " exceeds the total key length " << d.past + d.kv_seq);
  m.strides.assign(4, 1);
  for (int k = 2; k >= 0; --k) m.strides[k] = m.strides[k + 1] * m.dims[k + 1];
  return m;
}

// Concatenates past (4-D, may be absent) and the new K or V (3-D or 4-D) into present [B, Hkv, T, size] (float32).
Tensor make_present(const CpuContext& ctx, const AttnDims& d, size_t new_index, size_t past_index, int64_t size,
                    const char* name) {
  Tensor cur = to_float32(ctx.input(new_index), ctx.node, name);
  Tensor past;
  if (ctx.has_input(past_index)) past = to_float32(ctx.input(past_index), ctx.node, name);
  const int64_t total = d.past + d.kv_seq;
  Tensor out = Tensor::empty(DType::kFloat32, {d.batch, d.kv_heads, total, size});
  float* o = out.data<float>();
  const float* c = cur.data<float>();
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.kv_heads; ++h)
      for (int64_t t = 0; t < total; ++t)
        for (int64_t x = 0; x < size; ++x) {
          float v;
          if (t < d.past)
            v = past.data<float>()[((b * d.kv_heads + h) * d.past + t) * size + x];
          else
            v = c[qkv_index(d.three_d, d.kv_heads, d.kv_seq, size, b, h, t - d.past, x)];
          o[((b * d.kv_heads + h) * total + t) * size + x] = v;
        }
  return out;
}

void attention_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const AttnDims d = attention_dims(ctx);
  Tensor q = to_float32(ctx.input(0), node, "Q");
  Tensor present_k = make_present(ctx, d, 1, 4, d.head, "K");
  Tensor present_v = make_present(ctx, d, 2, 5, d.v_head, "V");
  Tensor mask_storage;
  const MaskView mask = make_mask(ctx, d, &mask_storage);
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) {
    KILNRT_CHECK(d.past == 0, kInvalidModel, node.describe(), "nonpad_kv_seqlen cannot be combined with past_key");
    nonpad = tensor_to_int64s(ctx.input(6));
    KILNRT_CHECK(static_cast<int64_t>(nonpad.size()) == d.batch, kInvalidModel, node.describe(),
                 "nonpad_kv_seqlen has " << nonpad.size() << " values, expected the batch size " << d.batch);
  }
  const bool causal = node.attr_int("is_causal", 0) != 0;
  const int64_t left = node.attr_int("left_window_size", -1), right = node.attr_int("right_window_size", -1);
  const double softcap = node.attr_float("softcap", 0.f);
  const int64_t mode = node.attr_int("qk_matmul_output_mode", 0);
  KILNRT_CHECK(mode >= 0 && mode <= 3, kInvalidModel, node.describe(),
               "qk_matmul_output_mode must be 0..3, got " << mode);
  const double scale = node.has_attr("scale") ? static_cast<double>(node.attr_float("scale", 1.f))
                                              : 1.0 / std::sqrt(static_cast<double>(d.head));
  const int64_t total = d.past + d.kv_seq, group = d.q_heads / d.kv_heads;

  Shape y_shape =
      d.three_d ? Shape{d.batch, d.q_seq, d.q_heads * d.v_head} : Shape{d.batch, d.q_heads, d.q_seq, d.v_head};
  Tensor y = Tensor::empty(DType::kFloat32, y_shape);
  Tensor qk_out = Tensor::empty(DType::kFloat32, {d.batch, d.q_heads, d.q_seq, total});
  const float* qp = q.data<float>();
  const float* kp = present_k.data<float>();
  const float* vp = present_v.data<float>();
  float* yp = y.data<float>();
  float* qkp = qk_out.data<float>();
  std::vector<double> scores(static_cast<size_t>(total)), bias(static_cast<size_t>(total));
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t offset = !nonpad.empty() ? nonpad[b] - d.q_seq : d.past;
    for (int64_t h = 0; h < d.q_heads; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < d.q_seq; ++i) {
        bool any_visible = false;
        for (int64_t j = 0; j < total; ++j) {
          double s = 0.0;
          for (int64_t x = 0; x < d.head; ++x)
            s += static_cast<double>(qp[qkv_index(d.three_d, d.q_heads, d.q_seq, d.head, b, h, i, x)]) *
                 kp[((b * d.kv_heads + kh) * total + j) * d.head + x];
          s *= scale;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          double bj = mask.at(b, h, i, j);
          if (causal && j > i + offset) bj = kNegInf;
          const int64_t diff = i + offset - j;
          if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) bj = kNegInf;
          if (!nonpad.empty() && j >= nonpad[b]) bj = kNegInf;
          any_visible = any_visible || bj != kNegInf;
          scores[j] = s;
          bias[j] = bj;
        }
        float* qk_row = qkp + ((b * d.q_heads + h) * d.q_seq + i) * total;
        if (mode <= 1)
          for (int64_t j = 0; j < total; ++j) qk_row[j] = static_cast<float>(scores[j]);
        double mx = kNegInf;
        for (int64_t j = 0; j < total; ++j) {
          scores[j] += bias[j];
          mx = std::max(mx, scores[j]);
        }
        if (mode == 2)
          for (int64_t j = 0; j < total; ++j) qk_row[j] = static_cast<float>(scores[j]);
        // Probabilities: a row with no visible key (or whose scores are all -inf) is all zero.
        double sum = 0.0;
        for (int64_t j = 0; j < total; ++j) {
          scores[j] = (!any_visible || mx == kNegInf) ? 0.0 : std::exp(scores[j] - mx);
          sum += scores[j];
        }
        for (int64_t j = 0; j < total; ++j) scores[j] = sum > 0 ? scores[j] / sum : 0.0;
        if (mode == 3)
          for (int64_t j = 0; j < total; ++j) qk_row[j] = static_cast<float>(scores[j]);
        for (int64_t x = 0; x < d.v_head; ++x) {
          double acc = 0.0;
          for (int64_t j = 0; j < total; ++j)
            if (scores[j] != 0.0) acc += scores[j] * vp[((b * d.kv_heads + kh) * total + j) * d.v_head + x];
          yp[qkv_index(d.three_d, d.q_heads, d.q_seq, d.v_head, b, h, i, x)] = static_cast<float>(acc);
        }
      }
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
  if (ctx.wants_output(1)) ctx.outputs[1] = from_float32(present_k, dtype);
  if (ctx.wants_output(2)) ctx.outputs[2] = from_float32(present_v, dtype);
  if (ctx.wants_output(3)) ctx.outputs[3] = from_float32(qk_out, dtype);
}

// ---- shape function ---------------------------------------------------------------------------------------------

ir::Dim div_dim(const ir::Dim& a, int64_t by) { return a.known() && by > 0 ? ir::Dim(a.value / by) : ir::Dim(); }
ir::Dim mul_dim(const ir::Dim& a, int64_t by) { return a.known() ? ir::Dim(a.value * by) : ir::Dim(); }
ir::Dim add_dim(const ir::Dim& a, const ir::Dim& b) {
  if (a.known() && a.value == 0) return b;
  return a.known() && b.known() ? ir::Dim(a.value + b.value) : ir::Dim();
}

void infer_attention_onnx(ShapeContext& ctx) {
  const ir::TensorType& q = ctx.input(0);
  const ir::TensorType& k = ctx.input(1);
  const ir::TensorType& v = ctx.input(2);
  const DType dt = q.dtype;
  if (!q.has_shape || !k.has_shape || !v.has_shape) {
    for (size_t i = 0; i < ctx.outputs.size(); ++i)
      if (!ctx.node.outputs[i].empty()) ctx.set_output_rank_unknown(i, dt);
    return;
  }
  const size_t r = q.shape.size();
  KILNRT_CHECK((r == 3 || r == 4) && k.shape.size() == r && v.shape.size() == r, kInvalidModel, ctx.node.describe(),
               "Q, K and V must all be 3-D or all 4-D");
  const int64_t qh = ctx.node.attr_int("q_num_heads", 0), kvh = ctx.node.attr_int("kv_num_heads", 0);
  ir::Dim batch = q.shape[0], q_seq, q_heads, kv_heads, kv_seq, head, v_head;
  if (r == 3) {
    KILNRT_CHECK(qh > 0 && kvh > 0, kInvalidModel, ctx.node.describe(),
                 "3-D Q/K/V need the q_num_heads and kv_num_heads attributes");
    q_seq = q.shape[1];
    q_heads = qh;
    kv_heads = kvh;
    kv_seq = k.shape[1];
    head = div_dim(k.shape[2], kvh);
    v_head = div_dim(v.shape[2], kvh);
  } else {
    q_heads = q.shape[1];
    q_seq = q.shape[2];
    kv_heads = k.shape[1];
    kv_seq = k.shape[2];
    head = k.shape[3];
    v_head = v.shape[3];
  }
  ir::Dim past(0);
  if (ctx.has_input(4)) {
    const ir::TensorType& pk = ctx.input(4);
    past = pk.has_shape && pk.shape.size() == 4 ? pk.shape[2] : ir::Dim();
  }
  const ir::Dim total = add_dim(past, kv_seq);
  if (r == 3)
    ctx.set_output(0, dt, {batch, q_seq, v.shape[2].known() ? mul_dim(v_head, qh) : ir::Dim()});
  else
    ctx.set_output(0, dt, {batch, q_heads, q_seq, v_head});
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) ctx.set_output(1, dt, {batch, kv_heads, total, head});
  if (ctx.outputs.size() > 2 && !ctx.node.outputs[2].empty()) ctx.set_output(2, dt, {batch, kv_heads, total, v_head});
  if (ctx.outputs.size() > 3 && !ctx.node.outputs[3].empty()) ctx.set_output(3, dt, {batch, q_heads, q_seq, total});
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "Attention", 23, 1000, infer_attention_onnx, attention_cpu, float_dtypes(),
                            "softmax(Q K^T * scale + mask) V: GQA, 3-D/4-D, KV cache, causal, softcap, windows"});

}  // namespace kilnrt::ops::nn
