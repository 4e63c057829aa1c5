// CUDA layer of Mean (float32): a chained broadcasting Add, then a scale by 1/N (the math unary kernel's kScale).
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/binary/cuda/binary_kernels.h"
#include "ops/math/unary/cuda/math_unary_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class MeanLayer final : public CudaLayer {
 public:
  explicit MeanLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:binary+scale"; }
  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const void* src = l.inputs[0].data;
    Shape a_shape = l.inputs[0].shape;
    for (size_t i = 1; i < l.inputs.size(); ++i) {
      const k::Broadcast3 bc = make_broadcast(y.shape, {y.shape, a_shape, l.inputs[i].shape});
      check_launch(k::binary(k::BinaryOp::kAdd, 0, src, l.inputs[i].data, y.data, y.numel(), bc, l.stream), name_,
                   "binary");
      src = y.data;
      a_shape = y.shape;
    }
    const float scale = 1.f / static_cast<float>(l.inputs.size());
    check_launch(k::xunary(k::XUnary::kScale, src, y.data, y.numel(), scale, 0.f, l.stream), name_, "xunary");
  }

 private:
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Mean"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (std::string e = dtype_in(n, g, i, {DType::kFloat32}); !e.empty()) return e;
      return n.inputs.empty() ? "needs inputs" : "";
    },
    factory<MeanLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
