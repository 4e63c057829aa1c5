// CUDA layer of ai.onnx.preview FlexAttention without score_mod / prob_mod: the row kernel of ONNX Attention
// (ops/nn/attention_onnx/cuda/attention_rows.h: no mask, not causal) on 4-D float32 / float64 Q, K, V with GQA.
#include <cmath>
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_io.h"
#include "ops/nn/attention_onnx/cuda/attention_rows.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels::attention_rows;

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
    KILNRT_CHECK(
        q->dtype == k->dtype && q->dtype == v->dtype && dtype_is_one_of(q->dtype, {DType::kFloat32, DType::kFloat64}),
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
  for (const char* attr : {"score_mod", "prob_mod"})
    if (n.has_attr(attr)) return std::string("FlexAttention's ") + attr + " graph attribute is not supported";
  if (n.inputs.size() < 3) return "FlexAttention needs Q, K and V";
  return check_dtypes(n, g, {0, 1, 2}, {DType::kFloat32, DType::kFloat64}, "float32 / float64 Q/K/V");
}

KILNRT_REGISTER_CUDA_LAYER({"ai.onnx.preview:FlexAttention"}, supports_flex,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<FlexAttentionLayer>(a.node);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
