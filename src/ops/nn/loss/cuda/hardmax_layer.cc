// CUDA layer of Hardmax (float32; before opset 13 the input is coerced to 2-D at the axis). Kernel: hardmax.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/loss/cuda/hardmax_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class HardmaxLayer final : public CudaLayer {
 public:
  HardmaxLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:hardmax"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis =
        static_cast<int>(ops::normalize_axis(node_.attr_int("axis", opset_ < 13 ? 1 : -1), xs.size(), node_));
    int64_t outer, n, inner;
    split3(xs, axis, &outer, &n, &inner);
    if (opset_ < 13) {  // coerced to 2-D [prod(dims before axis), prod(dims from axis)]
      n *= inner;
      inner = 1;
    }
    check_launch(k::hardmax_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data),
                                outer, n, inner, l.stream),
                 name_, "hardmax");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Hardmax"}, [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      return std::make_unique<HardmaxLayer>(a.node, a.opset);
    });

}  // namespace
}  // namespace kilnrt::backends::cuda
