// CUDA layer of com.kilnrt:EmbedLayerNorm (passes/fuse_embed_layernorm: Gather -> Add -> LayerNorm at the start of
// BERT-like encoders): one pass of the vectorized LayerNorm kernel that reads each row from the table through the ids
// and adds the addend row (nn/normalization/cuda/layernorm.h: embed_layernorm_vec). Where that kernel does not apply
// (row bytes not a multiple of 16, above its limit, or misaligned), the rows are gathered into Y first and normalized
// in place. Float32, float16, bfloat16 storage.
#include "ops/cuda/cuda_layer.h"
#include "cuda/kernels/kernels.h"
#include "ops/nn/normalization/cuda/layernorm.h"
#include "ops/nn/embed_layernorm/embed_layernorm.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string embed_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 4 || n.inputs.size() > 5) return "needs ids, table, addend, scale and an optional bias";
  const DType ids = value_dtype(g, n.inputs[0]);
  if (ids != DType::kInt64 && ids != DType::kInt32) return std::string("ids of dtype ") + dtype_name(ids);
  const DType t = value_dtype(g, n.inputs[1]);
  if (t != DType::kFloat32) return std::string("table of dtype ") + dtype_name(t) + " (the graph's must be float32)";
  return "";
}

class EmbedLayerNormLayer final : public CudaLayer {
 public:
  explicit EmbedLayerNormLayer(const ir::Node& n) : name_(n.describe()), eps_(n.attr_float("epsilon", 1e-5f)) {}
  std::string tactic() const override { return "kernel:embed-layernorm"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& ids = l.inputs[0];
    const LayerTensor& table = l.inputs[1];
    const LayerTensor& addend = l.inputs[2];
    KILNRT_CHECK(table.shape.size() == 2, kInvalidArgument, name_,
                 "the table must have rank 2, got " << shape_to_string(table.shape));
    const int64_t vocab = table.shape[0], h = table.shape[1], rows = ids.numel();
    const DType st = table.dtype;
    Shape out_shape = ids.shape;
    out_shape.push_back(h);
    KILNRT_CHECK(
        addend.dtype == st && ops::nn::addend_broadcasts_along_leading_dims(addend.shape, ir::shape_to_sym(out_shape)),
        kInvalidArgument, name_,
        "the addend " << shape_to_string(addend.shape) << " must have the table's dtype and broadcast "
                      << "along the leading dims of " << shape_to_string(out_shape) << " only");
    const int64_t period = h > 0 ? addend.numel() / h : 1;
    auto vec = [&](size_t i) -> const void* {
      if (i >= l.inputs.size() || !l.inputs[i].present) return nullptr;
      KILNRT_CHECK(l.inputs[i].numel() == h && l.inputs[i].dtype == st, kInvalidArgument, name_,
                   "input " << i << " of shape " << shape_to_string(l.inputs[i].shape) << " must have " << h
                            << " values of the table's dtype");
      return l.inputs[i].data;
    };
    const void* scale = vec(3);
    const void* bias = vec(4);
    LayerOutput& y = l.outputs[0];
    if (rows == 0 || h == 0) return;
    k::LayerNormEmbed e;
    e.ids = ids.data;
    e.ids64 = ids.dtype == DType::kInt64 ? 1 : 0;
    e.vocab = vocab;
    e.addend = addend.data;
    e.period = period;
    const int dt = float_code(st);
    const int fast =
        k::embed_layernorm_vec(dt, e, table.data, scale, bias, y.data, nullptr, nullptr, rows, h, eps_, l.stream);
    if (fast != -1) {
      check_launch(fast, name_, "embed_layernorm_vec");
      return;
    }
    check_launch(k::embed_rows(dt, e, table.data, y.data, rows, h, l.stream), name_, "embed_rows");
    check_launch(k::layernorm(dt, y.data, scale, bias, y.data, nullptr, nullptr, rows, h, eps_, l.stream), name_,
                 "layernorm");
  }

 private:
  std::string name_;
  float eps_;
};

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:EmbedLayerNorm"}, embed_supports,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<EmbedLayerNormLayer>(a.node);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
