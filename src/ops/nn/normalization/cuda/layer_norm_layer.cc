// CUDA layer of LayerNormalization (ai.onnx and com.kilnrt): rows of the normalized trailing dims (layernorm.h),
// optional Mean / InvStdDev outputs in float32 engines.
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/normalization/cuda/layernorm.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

class LayerNormLayer final : public CudaLayer {
  bool stats_ = false;

 public:
  explicit LayerNormLayer(const ir::Node& n) : node_(n), name_(n.describe()) {
    for (size_t i = 1; i < n.outputs.size(); ++i) stats_ |= !n.outputs[i].empty();
  }
  std::string tactic() const override { return "kernel:layernorm"; }
  bool supports_16bit() const override { return !stats_; }  // Mean / InvStdDev outputs: float32 island
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int rank = static_cast<int>(xs.size());
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", -1), rank, node_));
    int64_t rows = 1, n = 1;
    for (int d = 0; d < axis; ++d) rows *= xs[d];
    for (int d = axis; d < rank; ++d) n *= xs[d];
    auto param = [&](size_t i) -> const void* {
      if (i >= l.inputs.size() || !l.inputs[i].present) return nullptr;
      KILNRT_CHECK(l.inputs[i].numel() == n, kUnsupported, name_,
                   "LayerNormalization input " << i << " of shape " << shape_to_string(l.inputs[i].shape)
                                               << " must have the normalized shape's " << n << " elements");
      KILNRT_CHECK(l.inputs[i].dtype == l.inputs[0].dtype, kUnsupported, name_,
                   "LayerNormalization scale / bias must have X's dtype");
      return l.inputs[i].data;
    };
    auto out = [&](size_t i) -> void* {
      return i < l.outputs.size() && l.outputs[i].present ? l.outputs[i].data : nullptr;
    };
    // Mean / InvStdDev outputs (float32 in the graph) are float32 scratch written by the kernel as float: in 16-bit
    // engines they are stored 16-bit, so they are written through the float32 island path (not supported here).
    for (size_t i = 1; i < l.outputs.size(); ++i)
      KILNRT_CHECK(!l.outputs[i].present || l.outputs[i].dtype == DType::kFloat32, kUnsupported, name_,
                   "LayerNormalization Mean / InvStdDev outputs in a 16-bit engine");
    check_launch(k::layernorm(float_code(l.inputs[0].dtype), l.inputs[0].data, param(1), param(2), out(0),
                              static_cast<float*>(out(1)), static_cast<float*>(out(2)), rows, n,
                              node_.attr_float("epsilon", 1e-5f), l.stream),
                 name_, "layernorm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"LayerNormalization", "com.kilnrt:LayerNormalization"}, float_input,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<LayerNormLayer>(a.node);
                           });

}  // namespace kilnrt::backends::cuda
