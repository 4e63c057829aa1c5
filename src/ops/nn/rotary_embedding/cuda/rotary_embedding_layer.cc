// CUDA layer of RotaryEmbedding (opset 23): halves or interleaved pairs, partial rotary_embedding_dim, position_ids
// or per-token caches, 3-D or 4-D input, float32 (rotary_embedding.cu). position_ids are read by the kernel on the
// device: no host read, graph-capturable; float16 / bfloat16 tensors run as float32 islands.
#include <cmath>
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_io.h"
#include "ops/nn/rotary_embedding/cuda/rotary_embedding_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels;

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
                   "without position_ids the caches must be [B, S, rd/2] = ["
                       << a.batch << ", " << a.seq << ", " << a.rd / 2 << "], got " << shape_to_string(cs));
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
  if (!n.domain.empty() && n.domain != "ai.onnx")
    return "no CUDA layer for RotaryEmbedding in domain '" + n.domain + "'";
  if (n.inputs.size() < 3) return "RotaryEmbedding needs input, cos_cache and sin_cache";
  std::string why = check_dtypes(n, g, {0, 1, 2}, {DType::kFloat32}, "float32 tensors");
  if (why.empty()) why = check_dtypes(n, g, {3}, {DType::kInt64}, "int64 position_ids");
  return why;
}

KILNRT_REGISTER_CUDA_LAYER({"RotaryEmbedding"}, supports_rotary,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<RotaryLayer>(a.node);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
