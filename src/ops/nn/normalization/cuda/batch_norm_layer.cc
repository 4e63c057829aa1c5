// CUDA layers of BatchNormalization: inference with float32 constant parameters folded at load to a per-channel
// affine (channel_affine.cu); otherwise parameters read on the device, or training mode with batch statistics and
// the running mean / var outputs (batch_norm.cu, the arithmetic of the CPU reference in normalization.cc).
#include <cmath>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/normalization/cuda/batch_norm_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace gp = kilnrt::cuda::kernels::bn;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

class BatchNormLayer final : public CudaLayer {
 public:
  explicit BatchNormLayer(const LayerCreateArgs& a) : name_(a.node.describe()) {
    const ir::Node& n = a.node;
    const float eps = n.attr_float("epsilon", 1e-5f);
    const Tensor& scale = a.graph.constants.at(n.inputs[1]);
    const Tensor& bias = a.graph.constants.at(n.inputs[2]);
    const Tensor& mean = a.graph.constants.at(n.inputs[3]);
    const Tensor& var = a.graph.constants.at(n.inputs[4]);
    const int64_t c = scale.numel();
    Tensor mul = Tensor::empty(DType::kFloat32, {c}), add = Tensor::empty(DType::kFloat32, {c});
    for (int64_t i = 0; i < c; ++i) {
      const double inv = 1.0 / std::sqrt(double(var.data<float>()[i]) + eps);
      mul.data<float>()[i] = static_cast<float>(scale.data<float>()[i] * inv);
      add.data<float>()[i] =
          static_cast<float>(bias.data<float>()[i] - mean.data<float>()[i] * scale.data<float>()[i] * inv);
    }
    a_ = static_cast<const float*>(a.weights.upload(n.name + "/bn_scale", mul));
    b_ = static_cast<const float*>(a.weights.upload(n.name + "/bn_shift", add));
  }
  std::string tactic() const override { return "kernel:channel-affine"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1, 2, 3, 4}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    check_launch(k::channel_affine(float_code(l.inputs[0].dtype), l.inputs[0].data, a_, b_, l.outputs[0].data, xs[0],
                                   xs.size() > 1 ? xs[1] : 1, inner, l.stream),
                 name_, "channel_affine");
  }

 private:
  std::string name_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
};

// ---- BatchNormalization with device parameters -----------------------------------------------------------------
class BatchNormGeneralLayer final : public CudaLayer {
 public:
  explicit BatchNormGeneralLayer(const ir::Node& n)
      : name_(n.describe()),
        training_(n.attr_int("training_mode", 0) != 0),
        eps_(n.attr_float("epsilon", 1e-5f)),
        momentum_(n.attr_float("momentum", 0.9f)) {}
  std::string tactic() const override {
    return training_ ? "kernel:batchnorm-batch-stats" : "kernel:batchnorm-device-params";
  }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(x.shape.size() >= 2, kInvalidArgument, name_,
                 "X must be [N, C, ...], got " << shape_to_string(x.shape));
    gp::BatchNormArgs a;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.size = ops::nn::dims_product(x.shape, 2, static_cast<int64_t>(x.shape.size()));
    static const char* kNames[5] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 5; ++i) {
      const LayerTensor& t = l.inputs.at(i);
      KILNRT_CHECK(t.present && t.dtype == DType::kFloat32, kUnsupported, name_,
                   kNames[i] << " must be float32, got " << dtype_name(t.dtype));
      KILNRT_CHECK(i == 0 || t.numel() == a.c, kInvalidArgument, name_,
                   kNames[i] << " has " << t.numel() << " values for " << a.c << " channels");
    }
    a.x = static_cast<const float*>(x.data);
    a.scale = static_cast<const float*>(l.inputs[1].data);
    a.bias = static_cast<const float*>(l.inputs[2].data);
    a.mean = static_cast<const float*>(l.inputs[3].data);
    a.var = static_cast<const float*>(l.inputs[4].data);
    a.y = static_cast<float*>(l.outputs.at(0).data);
    auto out = [&](size_t i) -> float* {
      if (i >= l.outputs.size() || !l.outputs[i].present) return nullptr;
      KILNRT_CHECK(l.outputs[i].dtype == DType::kFloat32 && l.outputs[i].numel() == a.c, kInternal, name_,
                   "running statistics output " << i << " must be float32 with " << a.c << " values");
      return static_cast<float*>(l.outputs[i].data);
    };
    a.training = training_;
    a.running_mean = training_ ? out(1) : nullptr;
    a.running_var = training_ ? out(2) : nullptr;
    a.eps = eps_;
    a.momentum = momentum_;
    check_launch(gp::batch_norm_f32(a, l.stream), name_, "batch_norm");
  }

 private:
  std::string name_;
  bool training_;
  double eps_, momentum_;
};

bool batch_norm_needs_general(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 5) return false;  // the main layer reports it
  for (size_t i = 1; i < 5; ++i)
    if (n.inputs[i].empty() || !g.is_constant(n.inputs[i]) || value_dtype(g, n.inputs[i]) != DType::kFloat32)
      return true;
  if (n.attr_int("training_mode", 0) != 0) return true;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return true;
  return false;
}

std::string batch_norm_general_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 5) return "needs scale, B, mean and var";
  for (size_t i = 0; i < 5; ++i) {
    if (n.inputs[i].empty()) return "input " + std::to_string(i) + " is omitted";
    const DType t = value_dtype(g, n.inputs[i]);
    if (t != DType::kFloat32)
      return std::string("dtype ") + dtype_name(t) + " (this CUDA BatchNormalization takes float32)";
  }
  if (n.attr_int("spatial", 1) != 1) return "spatial=0";
  const bool training = n.attr_int("training_mode", 0) != 0;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && (!training || i > 2)) return "saved statistics outputs (before opset 14)";
  return "";
}

std::unique_ptr<CudaLayer> make_batch_norm_general(const LayerCreateArgs& a) {
  return std::make_unique<BatchNormGeneralLayer>(a.node);
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"BatchNormalization"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.size() < 5) return "needs scale, B, mean and var";
      if (batch_norm_needs_general(n, g)) return batch_norm_general_supports(n, g);  // device parameters
      for (size_t i = 1; i < 5; ++i)
        if (!g.is_constant(n.inputs[i]) || value_dtype(g, n.inputs[i]) != DType::kFloat32)
          return "scale/B/mean/var must be float32 constants";
      if (n.attr_int("training_mode", 0) != 0) return "training mode";
      for (size_t i = 1; i < n.outputs.size(); ++i)
        if (!n.outputs[i].empty()) return "running statistics outputs";
      return float_input(n, g);
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      if (batch_norm_needs_general(a.node, a.graph)) return make_batch_norm_general(a);
      return std::make_unique<BatchNormLayer>(a);
    });

}  // namespace kilnrt::backends::cuda
