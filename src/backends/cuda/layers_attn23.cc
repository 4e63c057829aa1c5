// CUDA layers of the onnx 1.23 attention-family ops: ONNX Attention (opsets 23-25: GQA, 3-D / 4-D,
// KV cache past / present, bool / float masks, causal, sliding windows, softcap, nonpad_kv_seqlen, the four
// qk_matmul_output modes, fully masked rows), ai.onnx.preview FlexAttention without score_mod / prob_mod,
// RotaryEmbedding, SwiGLU and Swish. Kernels: kernels/attn23.cu, the CPU reference's formulas (math in double for
// attention). Attention and RotaryEmbedding take float32 (FlexAttention, Swish and SwiGLU float64 too); float16 /
// bfloat16 tensors run as float32 islands (float32_island.h), as the CPU reference computes them in float / double.
// Device values (nonpad_kv_seqlen, position_ids) are read by the kernels: no host read, graph-capturable.
#include <cmath>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/attn23.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels::attn23;

const LayerTensor* input_at(const LayerLaunch& l, size_t i) {
  return i < l.inputs.size() && l.inputs[i].present ? &l.inputs[i] : nullptr;
}
LayerOutput* output_at(LayerLaunch& l, size_t i) {
  return i < l.outputs.size() && l.outputs[i].present ? &l.outputs[i] : nullptr;
}
std::string input_name(const ir::Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : std::string(); }

// "" when every present input i of `n` in `which` has one of `ok` dtypes (or an unknown dtype).
std::string check_dtypes(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> which,
                         std::initializer_list<DType> ok, const char* what) {
  for (size_t i : which) {
    const std::string v = input_name(n, i);
    if (v.empty()) continue;
    const DType d = value_dtype(g, v);
    if (d != DType::kUndefined && !dtype_is_one_of(d, ok))
      return "input " + std::to_string(i) + " is " + dtype_name(d) + ": the CUDA layer takes " + what;
  }
  return "";
}

// Splits a 3-D [B, S, H*D] or 4-D [B, H, S, D] shape into heads, seq, size.
void split(const std::string& node, const Shape& s, bool three_d, int64_t heads_attr, const char* name, int64_t* heads,
           int64_t* seq, int64_t* size) {
  if (three_d) {
    KILNRT_CHECK(heads_attr > 0 && s[2] % heads_attr == 0, kInvalidModel, node,
                 "3-D " << name << " of shape " << shape_to_string(s)
                        << " needs q_num_heads / kv_num_heads that divide its last dim (got " << heads_attr << ")");
    *heads = heads_attr;
    *seq = s[1];
    *size = s[2] / heads_attr;
  } else {
    *heads = s[1];
    *seq = s[2];
    *size = s[3];
  }
}

// Scratch rows of `total` doubles the context workspace holds (throws when not even one).
int64_t scratch_rows(const LayerLaunch& l, int64_t total, const std::string& node) {
  const int64_t per_row = (total > 0 ? total : 1) * static_cast<int64_t>(sizeof(double));
  const int64_t rows = l.workspace ? static_cast<int64_t>(l.workspace_bytes) / per_row : 0;
  KILNRT_CHECK(rows > 0, kUnsupported, node,
               "a key length of " << total << " needs " << per_row << " bytes of workspace per query row, the context "
                                  << "has " << l.workspace_bytes);
  return rows;
}

// ---- Attention (opsets 23-25) -------------------------------------------------------------------------------------
class AttentionOnnxLayer final : public CudaLayer {
 public:
  explicit AttentionOnnxLayer(const ir::Node& n)
      : name_(n.describe()),
        qh_(n.attr_int("q_num_heads", 0)),
        kvh_(n.attr_int("kv_num_heads", 0)),
        causal_(n.attr_int("is_causal", 0) != 0),
        left_(n.attr_int("left_window_size", -1)),
        right_(n.attr_int("right_window_size", -1)),
        mode_(n.attr_int("qk_matmul_output_mode", 0)),
        softcap_(n.attr_float("softcap", 0.f)),
        has_scale_(n.has_attr("scale")),
        scale_(n.has_attr("scale") ? n.attr_float("scale", 1.f) : 1.f) {
    KILNRT_CHECK(mode_ >= 0 && mode_ <= 3, kInvalidModel, name_, "qk_matmul_output_mode must be 0..3, got " << mode_);
  }
  std::string tactic() const override { return "kernel:attention-rows"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* q = input_at(l, 0);
    const LayerTensor* k = input_at(l, 1);
    const LayerTensor* v = input_at(l, 2);
    KILNRT_CHECK(q && k && v, kInvalidModel, name_, "Q, K and V are required");
    const size_t r = q->shape.size();
    KILNRT_CHECK((r == 3 || r == 4) && k->shape.size() == r && v->shape.size() == r, kInvalidModel, name_,
                 "Q, K and V must all be 3-D or all 4-D, got " << shape_to_string(q->shape) << ", "
                                                                << shape_to_string(k->shape) << ", "
                                                                << shape_to_string(v->shape));
    for (const LayerTensor* t : {q, k, v})
      KILNRT_CHECK(t->dtype == DType::kFloat32, kUnsupported, name_,
                   "the CUDA Attention takes float32 Q/K/V, got " << dtype_name(t->dtype));
    ak::AttnArgs a;
    a.three_d = r == 3;
    a.batch = q->shape[0];
    int64_t k_heads = 0, v_heads = 0, v_seq = 0, k_head = 0;
    split(name_, q->shape, a.three_d, qh_, "Q", &a.q_heads, &a.q_seq, &a.head);
    split(name_, k->shape, a.three_d, kvh_, "K", &k_heads, &a.kv_seq, &k_head);
    split(name_, v->shape, a.three_d, kvh_, "V", &v_heads, &v_seq, &a.v_head);
    a.kv_heads = k_heads;
    KILNRT_CHECK(k->shape[0] == a.batch && v->shape[0] == a.batch && k_heads == v_heads && v_seq == a.kv_seq &&
                     k_head == a.head && a.kv_heads > 0 && a.q_heads % a.kv_heads == 0,
                 kInvalidModel, name_,
                 "inconsistent Q/K/V shapes " << shape_to_string(q->shape) << ", " << shape_to_string(k->shape)
                                              << ", " << shape_to_string(v->shape)
                                              << " (q heads must be a multiple of kv heads)");
    const LayerTensor* pk = input_at(l, 4);
    const LayerTensor* pv = input_at(l, 5);
    KILNRT_CHECK(!pk == !pv, kInvalidModel, name_, "past_key and past_value must be given together");
    if (pk) {
      const Shape& ks = pk->shape;
      const Shape& vs = pv->shape;
      KILNRT_CHECK(ks.size() == 4 && vs.size() == 4 && ks[0] == a.batch && ks[1] == a.kv_heads && ks[3] == a.head &&
                       vs[0] == a.batch && vs[1] == a.kv_heads && vs[2] == ks[2] && vs[3] == a.v_head,
                   kInvalidModel, name_,
                   "past_key " << shape_to_string(ks) << " / past_value " << shape_to_string(vs)
                               << " do not match [B, kv_heads, past, head_size]");
      KILNRT_CHECK(pk->dtype == DType::kFloat32 && pv->dtype == DType::kFloat32, kUnsupported, name_,
                   "past_key / past_value must be float32 like Q");
      a.past = ks[2];
      a.past_k = pk->data;
      a.past_v = pv->data;
    }
    const int64_t total = a.past + a.kv_seq;
    if (const LayerTensor* m = input_at(l, 3)) {
      const Shape& s = m->shape;
      KILNRT_CHECK(s.size() >= 1 && s.size() <= 4, kInvalidModel, name_,
                   "attn_mask must have rank 1 to 4, got " << shape_to_string(s));
      KILNRT_CHECK(m->dtype == DType::kBool || m->dtype == DType::kFloat32, kUnsupported, name_,
                   "attn_mask must be bool or float32 (like Q), got " << dtype_name(m->dtype));
      for (size_t d = 0; d < s.size(); ++d) a.mask_dims[4 - s.size() + d] = s[d];
      const int64_t want[3] = {a.batch, a.q_heads, a.q_seq};
      for (int d = 0; d < 3; ++d)
        KILNRT_CHECK(a.mask_dims[d] == 1 || a.mask_dims[d] == want[d], kInvalidModel, name_,
                     "attn_mask of shape " << shape_to_string(s) << " does not broadcast to [" << a.batch << ", "
                                           << a.q_heads << ", " << a.q_seq << ", " << total << "]");
      KILNRT_CHECK(a.mask_dims[3] <= total, kInvalidModel, name_,
                   "attn_mask's last dim " << a.mask_dims[3] << " exceeds the total key length " << total);
      a.mask_strides[3] = 1;
      for (int d = 2; d >= 0; --d) a.mask_strides[d] = a.mask_strides[d + 1] * a.mask_dims[d + 1];
      a.has_mask = true;
      a.mask = m->data;
      a.mask_bool = m->dtype == DType::kBool;
    }
    if (const LayerTensor* np = input_at(l, 6)) {
      KILNRT_CHECK(a.past == 0, kInvalidModel, name_, "nonpad_kv_seqlen cannot be combined with past_key");
      KILNRT_CHECK(np->numel() == a.batch, kInvalidModel, name_,
                   "nonpad_kv_seqlen has " << np->numel() << " values, expected the batch size " << a.batch);
      KILNRT_CHECK(np->dtype == DType::kInt64, kUnsupported, name_, "nonpad_kv_seqlen must be int64");
      a.nonpad = static_cast<const int64_t*>(np->data);
    }
    a.q = q->data;
    a.k = k->data;
    a.v = v->data;
    a.causal = causal_;
    a.left = left_;
    a.right = right_;
    a.softcap = softcap_;
    a.scale = has_scale_ ? static_cast<double>(scale_) : 1.0 / std::sqrt(static_cast<double>(a.head));
    a.mode = static_cast<int>(mode_);
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(y, kInvalidModel, name_, "output Y is required");
    a.y = y->data;
    if (LayerOutput* qk = output_at(l, 3)) a.qk_out = qk->data;
    const int64_t rows = a.batch * a.q_heads * a.q_seq;
    if (rows > 0 && a.v_head > 0) {
      a.scratch = static_cast<double*>(l.workspace);
      a.scratch_rows = scratch_rows(l, total, name_);
      check_launch(ak::attention(a, l.stream), name_, "attention_rows");
    }
    const struct {
      size_t out, past, cur;
      int64_t size;
    } presents[2] = {{1, 4, 1, a.head}, {2, 5, 2, a.v_head}};
    for (const auto& p : presents)
      if (LayerOutput* o = output_at(l, p.out)) {
        const LayerTensor* past = input_at(l, p.past);
        check_launch(ak::present_concat(past ? past->data : nullptr, l.inputs[p.cur].data, o->data, a.batch,
                                        a.kv_heads, a.past, a.kv_seq, p.size, a.three_d, false, l.stream),
                     name_, "present_concat");
      }
  }

 private:
  std::string name_;
  int64_t qh_, kvh_;
  bool causal_;
  int64_t left_, right_, mode_;
  float softcap_;
  bool has_scale_;
  float scale_;
};

std::string supports_attention(const ir::Node& n, const ir::Graph& g) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return "no CUDA layer for Attention in domain '" + n.domain + "'";
  if (n.inputs.size() < 3) return "Attention needs Q, K and V";
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return "qk_matmul_output_mode must be 0..3";
  std::string why = check_dtypes(n, g, {0, 1, 2, 4, 5}, {DType::kFloat32}, "float32 Q/K/V/past");
  if (why.empty()) why = check_dtypes(n, g, {3}, {DType::kFloat32, DType::kBool}, "a bool or float32 attn_mask");
  if (why.empty()) why = check_dtypes(n, g, {6}, {DType::kInt64}, "int64 nonpad_kv_seqlen");
  return why;
}

// ---- FlexAttention (ai.onnx.preview, without score_mod / prob_mod) ------------------------------------------------
class FlexAttentionLayer final : public CudaLayer {
 public:
  explicit FlexAttentionLayer(const ir::Node& n)
      : name_(n.describe()), has_scale_(n.has_attr("scale")), scale_(n.attr_float("scale", 1.f)) {}
  std::string tactic() const override { return "kernel:flex-attention-rows"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* q = input_at(l, 0);
    const LayerTensor* k = input_at(l, 1);
    const LayerTensor* v = input_at(l, 2);
    KILNRT_CHECK(q && k && v && q->shape.size() == 4 && k->shape.size() == 4 && v->shape.size() == 4, kInvalidModel,
                 name_, "Q, K and V must be 4-D [B, heads, seq, size]");
    KILNRT_CHECK(q->dtype == k->dtype && q->dtype == v->dtype &&
                     dtype_is_one_of(q->dtype, {DType::kFloat32, DType::kFloat64}),
                 kUnsupported, name_, "the CUDA FlexAttention takes float32 or float64 Q/K/V of one dtype");
    ak::AttnArgs a;
    a.batch = q->shape[0];
    a.q_heads = q->shape[1];
    a.q_seq = q->shape[2];
    a.head = q->shape[3];
    a.kv_heads = k->shape[1];
    a.kv_seq = k->shape[2];
    a.v_head = v->shape[3];
    KILNRT_CHECK(k->shape[0] == a.batch && v->shape[0] == a.batch && k->shape[3] == a.head &&
                     v->shape[1] == a.kv_heads && v->shape[2] == a.kv_seq && a.kv_heads > 0 &&
                     a.q_heads % a.kv_heads == 0,
                 kInvalidModel, name_,
                 "inconsistent shapes Q " << shape_to_string(q->shape) << ", K " << shape_to_string(k->shape) << ", V "
                                          << shape_to_string(v->shape));
    a.f64 = q->dtype == DType::kFloat64;
    a.q = q->data;
    a.k = k->data;
    a.v = v->data;
    a.scale = has_scale_ ? static_cast<double>(scale_) : 1.0 / std::sqrt(static_cast<double>(a.head));
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(y, kInvalidModel, name_, "output Y is required");
    a.y = y->data;
    if (a.batch * a.q_heads * a.q_seq > 0 && a.v_head > 0) {
      a.scratch = static_cast<double*>(l.workspace);
      a.scratch_rows = scratch_rows(l, a.kv_seq, name_);
      check_launch(ak::attention(a, l.stream), name_, "attention_rows");
    }
  }

 private:
  std::string name_;
  bool has_scale_;
  float scale_;
};

std::string supports_flex(const ir::Node& n, const ir::Graph& g) {
  if (n.domain != "ai.onnx.preview") return "no CUDA layer for FlexAttention in domain '" + n.domain + "'";
  for (const char* attr : {"score_mod", "prob_mod"})
    if (n.has_attr(attr)) return std::string("FlexAttention's ") + attr + " graph attribute is not supported";
  if (n.inputs.size() < 3) return "FlexAttention needs Q, K and V";
  return check_dtypes(n, g, {0, 1, 2}, {DType::kFloat32, DType::kFloat64}, "float32 / float64 Q/K/V");
}

// ---- RotaryEmbedding ------------------------------------------------------------------------------------------------
class RotaryLayer final : public CudaLayer {
 public:
  explicit RotaryLayer(const ir::Node& n)
      : name_(n.describe()),
        heads_(n.attr_int("num_heads", 0)),
        rd_(n.attr_int("rotary_embedding_dim", 0)),
        interleaved_(n.attr_int("interleaved", 0) != 0) {}
  std::string tactic() const override { return "kernel:rotary-embedding"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* x = input_at(l, 0);
    const LayerTensor* c = input_at(l, 1);
    const LayerTensor* s = input_at(l, 2);
    KILNRT_CHECK(x && c && s, kInvalidModel, name_, "input, cos_cache and sin_cache are required");
    for (const LayerTensor* t : {x, c, s})
      KILNRT_CHECK(t->dtype == DType::kFloat32, kUnsupported, name_,
                   "the CUDA RotaryEmbedding takes float32 tensors, got " << dtype_name(t->dtype));
    const Shape& xs = x->shape;
    KILNRT_CHECK(xs.size() == 3 || xs.size() == 4, kInvalidModel, name_,
                 "input must be [B, H, S, D] or [B, S, H*D], got " << shape_to_string(xs));
    ak::RotaryArgs a;
    a.three_d = xs.size() == 3;
    a.batch = xs[0];
    if (a.three_d) {
      KILNRT_CHECK(heads_ > 0 && xs[2] % heads_ == 0, kInvalidModel, name_,
                   "3-D input " << shape_to_string(xs) << " needs a num_heads attribute dividing its last dim");
      a.heads = heads_;
      a.seq = xs[1];
      a.head = xs[2] / heads_;
    } else {
      a.heads = xs[1];
      a.seq = xs[2];
      a.head = xs[3];
    }
    a.rd = rd_ == 0 ? a.head : rd_;
    KILNRT_CHECK(a.rd > 0 && a.rd <= a.head && a.rd % 2 == 0, kInvalidModel, name_,
                 "rotary_embedding_dim " << a.rd << " must be even and at most the head size " << a.head);
    const Shape& cs = c->shape;
    KILNRT_CHECK(cs == s->shape && !cs.empty() && cs.back() == a.rd / 2, kInvalidModel, name_,
                 "cos_cache " << shape_to_string(cs) << " / sin_cache " << shape_to_string(s->shape)
                              << " must match, with last dim rotary_embedding_dim/2 = " << a.rd / 2);
    if (const LayerTensor* p = input_at(l, 3)) {
      KILNRT_CHECK(cs.size() == 2 && p->numel() == a.batch * a.seq, kInvalidModel, name_,
                   "with position_ids [B, S] the caches must be [max_position, rd/2], got " << shape_to_string(cs));
      KILNRT_CHECK(p->dtype == DType::kInt64, kUnsupported, name_, "position_ids must be int64");
      a.pos = static_cast<const int64_t*>(p->data);
      a.cache_rows = cs[0];
    } else {
      KILNRT_CHECK(cs.size() == 3 && cs[0] == a.batch && cs[1] == a.seq, kInvalidModel, name_,
                   "without position_ids the caches must be [B, S, rd/2] = [" << a.batch << ", " << a.seq << ", "
                                                                              << a.rd / 2 << "], got "
                                                                              << shape_to_string(cs));
      a.cache_rows = a.batch * a.seq;
    }
    a.x = static_cast<const float*>(x->data);
    a.cos = static_cast<const float*>(c->data);
    a.sin = static_cast<const float*>(s->data);
    a.interleaved = interleaved_;
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(y, kInvalidModel, name_, "the output is required");
    a.y = static_cast<float*>(y->data);
    check_launch(ak::rotary(a, l.stream), name_, "rotary");
  }

 private:
  std::string name_;
  int64_t heads_, rd_;
  bool interleaved_;
};

std::string supports_rotary(const ir::Node& n, const ir::Graph& g) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return "no CUDA layer for RotaryEmbedding in domain '" + n.domain + "'";
  if (n.inputs.size() < 3) return "RotaryEmbedding needs input, cos_cache and sin_cache";
  std::string why = check_dtypes(n, g, {0, 1, 2}, {DType::kFloat32}, "float32 tensors");
  if (why.empty()) why = check_dtypes(n, g, {3}, {DType::kInt64}, "int64 position_ids");
  return why;
}

// ---- Swish / SwiGLU -------------------------------------------------------------------------------------------------
class GatedLayer final : public CudaLayer {
 public:
  explicit GatedLayer(const ir::Node& n) : name_(n.describe()), op_(n.op_type), alpha_(n.attr_float("alpha", 1.f)) {}
  std::string tactic() const override { return "kernel:" + op_; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* a = input_at(l, 0);
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(a && y, kInvalidModel, name_, "input and output are required");
    KILNRT_CHECK(dtype_is_one_of(a->dtype, {DType::kFloat32, DType::kFloat64}), kUnsupported, name_,
                 "the CUDA " << op_ << " takes float32 / float64, got " << dtype_name(a->dtype));
    const bool f64 = a->dtype == DType::kFloat64;
    if (op_ == "Swish") {
      check_launch(ak::swish(a->data, y->data, a->numel(), alpha_, f64, l.stream), name_, "swish");
      return;
    }
    const LayerTensor* b = input_at(l, 1);
    KILNRT_CHECK(b && b->dtype == a->dtype && b->shape == a->shape, kInvalidModel, name_,
                 "SwiGLU needs A and B of the same shape and dtype, got " << shape_to_string(a->shape) << " and "
                                                                           << (b ? shape_to_string(b->shape) : "none"));
    check_launch(ak::swiglu(a->data, b->data, y->data, a->numel(), alpha_, f64, l.stream), name_, "swiglu");
  }

 private:
  std::string name_, op_;
  double alpha_;
};

std::string supports_gated(const ir::Node& n, const ir::Graph& g) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return "no CUDA layer for " + n.op_type + " in domain '" + n.domain + "'";
  const size_t need = n.op_type == "Swish" ? 1 : 2;
  if (n.inputs.size() < need) return n.op_type + " needs " + std::to_string(need) + " inputs";
  return n.op_type == "Swish" ? check_dtypes(n, g, {0}, {DType::kFloat32, DType::kFloat64}, "float32 / float64")
                              : check_dtypes(n, g, {0, 1}, {DType::kFloat32, DType::kFloat64}, "float32 / float64");
}

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

const LayerRegistrar kAttentionOnnx({"Attention", supports_attention, factory<AttentionOnnxLayer>()});
const LayerRegistrar kFlexAttention({"FlexAttention", supports_flex, factory<FlexAttentionLayer>()});
const LayerRegistrar kRotary({"RotaryEmbedding", supports_rotary, factory<RotaryLayer>()});
const LayerRegistrar kSwish({"Swish", supports_gated, factory<GatedLayer>()});
const LayerRegistrar kSwiGlu({"SwiGLU", supports_gated, factory<GatedLayer>()});

}  // namespace
}  // namespace kilnrt::backends::cuda
