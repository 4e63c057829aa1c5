// CUDA layer of NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: a log-softmax kernel (SoftmaxCrossEntropyLoss)
// then one NLL kernel, float32 scores, int64 / int32 targets.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/loss/cuda/nll_loss_kernels.h"
#include "ops/nn/softmax/cuda/softmax_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels;

// ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss --------------------------------------------------------
class LossLayer final : public CudaLayer {
 public:
  explicit LossLayer(const ir::Node& n)
      : name_(n.describe()),
        softmax_(n.op_type == "SoftmaxCrossEntropyLoss"),
        has_ignore_(n.has_attr("ignore_index")),
        ignore_(n.attr_int("ignore_index", 0)) {
    const std::string r = n.attr_string("reduction", std::string("mean"));
    reduction_ = r == "none" ? 0 : r == "sum" ? 1 : 2;
  }
  std::string tactic() const override { return softmax_ ? "kernel:log-softmax+nll" : "kernel:nll"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& xin = l.inputs[0];
    const Shape& xs = xin.shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "input needs rank >= 2 (N, C, ...)");
    const int64_t n = xs[0], c = xs[1];
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    const float* logp = static_cast<const float*>(xin.data);
    if (softmax_) {
      void* buf = l.outputs.size() > 1 && l.outputs[1].present ? l.outputs[1].data : nullptr;
      if (!buf) {
        KILNRT_CHECK(static_cast<size_t>(xin.numel()) * sizeof(float) <= l.workspace_bytes, kUnsupported, name_,
                     "log-probabilities of " << xin.numel() << " elements exceed the CUDA workspace");
        buf = l.workspace;
      }
      if (xin.numel() > 0)
        check_launch(k::softmax_f32(logp, static_cast<float*>(buf), n, c, inner, true, l.stream), name_, "softmax");
      logp = static_cast<const float*>(buf);
    }
    const bool has_w = l.inputs.size() > 2 && l.inputs[2].present;
    check_launch(x::nll_loss_f32(logp, l.inputs[1].data, l.inputs[1].dtype == DType::kInt64,
                                 has_w ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                                 static_cast<float*>(l.outputs[0].data), n, c, inner, has_ignore_, ignore_, reduction_,
                                 l.stream),
                 name_, "nll_loss");
  }

 private:
  std::string name_;
  bool softmax_, has_ignore_;
  int64_t ignore_;
  int reduction_ = 2;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA layer takes float32";
      const DType t = value_dtype(g, n.inputs.at(1));
      if (t != DType::kInt64 && t != DType::kInt32) return "targets must be int64 or int32";
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != DType::kFloat32)
        return "weights must be float32";
      return "";
    },
    factory<LossLayer>());

}  // namespace kilnrt::backends::cuda
