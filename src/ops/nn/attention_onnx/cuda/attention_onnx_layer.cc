// CUDA layer of ONNX Attention (opsets 23-25: GQA, 3-D / 4-D, KV cache past / present, bool / float masks, causal,
// sliding windows, softcap, nonpad_kv_seqlen, the four qk_matmul_output modes, fully masked rows): the row kernel
// of attention_rows.cu with the CPU reference's formulas (math in double), then the present K / V concatenation.
// Float32; float16 / bfloat16 tensors run as float32 islands (float32_island.h), as the CPU reference computes them
// in float / double. nonpad_kv_seqlen is read by the kernel on the device: no host read, graph-capturable.
#include <cmath>
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_io.h"
#include "ops/nn/attention_onnx/cuda/attention_rows.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels::attention_rows;

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
                 "inconsistent Q/K/V shapes " << shape_to_string(q->shape) << ", " << shape_to_string(k->shape) << ", "
                                              << shape_to_string(v->shape)
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
        check_launch(ak::present_concat(past ? past->data : nullptr, l.inputs[p.cur].data, o->data, a.batch, a.kv_heads,
                                        a.past, a.kv_seq, p.size, a.three_d, false, l.stream),
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
  if (n.inputs.size() < 3) return "Attention needs Q, K and V";
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return "qk_matmul_output_mode must be 0..3";
  std::string why = check_dtypes(n, g, {0, 1, 2, 4, 5}, {DType::kFloat32}, "float32 Q/K/V/past");
  if (why.empty()) why = check_dtypes(n, g, {3}, {DType::kFloat32, DType::kBool}, "a bool or float32 attn_mask");
  if (why.empty()) why = check_dtypes(n, g, {6}, {DType::kInt64}, "int64 nonpad_kv_seqlen");
  return why;
}

KILNRT_REGISTER_CUDA_LAYER({"Attention"}, supports_attention,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<AttentionOnnxLayer>(a.node);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
