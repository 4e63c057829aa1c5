// CUDA layer of com.kilnrt:FusedAttention (made by passes/fuse_attention): one launch of the fused attention
// kernel (attention.cu), reading Q / K / V / mask in their exported layouts through strides (and Q / K / V
// as parts of one packed projection: q_part / k_part / v_part offsets) and writing the output in out_perm's layout.
// Float32, float16 and bfloat16 storage; no workspace, no allocation: graph-safe. Or, where the build timed it faster,
// cuDNN's fused SDPA on the same strided operands (cudnn_attention.h: 16-bit storage, head size 64 / 128; the softmax
// statistics in the context workspace).
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/fused_attention/cuda/cudnn_attention.h"
#include "ops/nn/fused_attention/cuda/attention.h"
#include "ops/nn/fused_attention/fused_attention.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// Logical dim `logical` of an operand (its part, then its perm), -1 when unknown.
int64_t known_dim(const ir::Node& n, const ir::Graph& g, const std::string& v, const char* part_attr,
                  const std::vector<int64_t>& perm, size_t logical) {
  const ir::TensorType* t = g.type_of(v);
  if (!t || !t->has_shape || t->shape.size() != perm.size() || logical >= perm.size()) return -1;
  const std::vector<int64_t> part = ops::nn::attention_part(n, part_attr, perm.size());
  if (!part.empty() && part[0] == perm[logical]) return part[2];
  return t->shape[perm[logical]].value;
}

std::string attention_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 3 || n.inputs.size() > 4) return "needs Q, K, V and an optional mask";
  const DType dt = value_dtype(g, n.inputs[0]);
  if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kBFloat16)
    return std::string("dtype ") + dtype_name(dt);
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != dt) return "Q, K, V and the mask must share a dtype";
  const ir::TensorType* q = g.type_of(n.inputs[0]);
  if (q && q->has_shape) {
    const size_t r = q->shape.size();
    if (r < 2 || r > 4) return "rank must be 2 to 4";
    const int64_t d = known_dim(n, g, n.inputs[0], "q_part", ops::nn::attention_perm(n, "q_perm", r), r - 1);
    const int64_t dv = known_dim(n, g, n.inputs[2], "v_part", ops::nn::attention_perm(n, "v_perm", r), r - 1);
    if (d > k::kAttentionMaxHead || dv > k::kAttentionMaxHead)
      return "head size above " + std::to_string(k::kAttentionMaxHead);
  }
  return "";
}

class AttentionLayer final : public CudaLayer {
 public:
  explicit AttentionLayer(const ir::Node& n)
      : node_(n),
        name_(n.describe()),
        scale_(n.attr_float("scale", 1.f)),
        zero_masked_rows_(n.attr_int("zero_masked_rows", 0) != 0) {}
  std::string tactic() const override { return cudnn_.uses_cudnn() ? "cudnn:sdpa" : "kernel:fused-attention"; }
  // cuDNN's SDPA as a tactic (cudnn_attention.h): the stored choice, or timed against the kernel at build.
  void setup_cudnn(const LayerCreateArgs& a) {
    cudnn_.setup(a, zero_masked_rows_, [this](LayerLaunch& l) { enqueue(l); });
  }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const bool mask = l.inputs.size() > 3 && l.inputs[3].present;
    const ops::nn::AttentionGeometry g = ops::nn::attention_geometry(
        node_, l.inputs[0].shape, l.inputs[1].shape, l.inputs[2].shape, mask ? &l.inputs[3].shape : nullptr);
    KILNRT_CHECK(g.out_shape == l.outputs[0].shape, kInternal, name_,
                 "output shape " << shape_to_string(l.outputs[0].shape) << " differs from the attention's "
                                 << shape_to_string(g.out_shape));
    KILNRT_CHECK(g.d <= k::kAttentionMaxHead && g.dv <= k::kAttentionMaxHead, kUnsupported, name_,
                 "head sizes " << g.d << " / " << g.dv << " above " << k::kAttentionMaxHead);
    const DType dt = l.inputs[0].dtype;
    for (size_t i = 1; i < (mask ? 4u : 3u); ++i)
      KILNRT_CHECK(l.inputs[i].dtype == dt, kUnsupported, name_,
                   "input " << i << " is " << dtype_name(l.inputs[i].dtype) << ", Q is " << dtype_name(dt));
    if (l.outputs[0].numel() == 0) return;
    k::AttentionArgs a;
    a.dt = float_code(dt);
    // Parts (q_part / k_part / v_part): the operand starts inside its input, e.g. one packed Q | K | V projection.
    const size_t es = dtype_size(dt);
    a.q = static_cast<const unsigned char*>(l.inputs[0].data) + g.q_offset * es;
    a.k = static_cast<const unsigned char*>(l.inputs[1].data) + g.k_offset * es;
    a.v = static_cast<const unsigned char*>(l.inputs[2].data) + g.v_offset * es;
    a.mask = mask ? l.inputs[3].data : nullptr;
    a.o = l.outputs[0].data;
    a.b0 = g.b0;
    a.b1 = g.b1;
    a.sq = g.sq;
    a.sk = g.sk;
    a.d = g.d;
    a.dv = g.dv;
    for (int i = 0; i < 4; ++i) {
      a.qs[i] = g.q[i];
      a.ks[i] = g.k[i];
      a.vs[i] = g.v[i];
      a.ms[i] = g.m[i];
      a.os[i] = g.o[i];
    }
    a.scale = scale_;
    a.zero_masked_rows = zero_masked_rows_ ? 1 : 0;
    if (cudnn_.run(a, l, name_)) return;
    check_launch(k::attention(a, l.stream), name_, "attention");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  float scale_;
  bool zero_masked_rows_;
  CudnnAttention cudnn_;
};

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:FusedAttention"}, attention_supports,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             auto layer = std::make_unique<AttentionLayer>(a.node);
                             layer->setup_cudnn(a);
                             return layer;
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
