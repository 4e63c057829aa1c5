// CUDA layer of LRN (local response normalization across channels), float32.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/normalization/cuda/lrn_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

std::string float32_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

class LrnLayer final : public CudaLayer {
 public:
  explicit LrnLayer(const ir::Node& n)
      : name_(n.describe()),
        size_(static_cast<int>(n.attr_int("size"))),
        alpha_(n.attr_float("alpha", 1e-4f)),
        beta_(n.attr_float("beta", 0.75f)),
        bias_(n.attr_float("bias", 1.0f)) {}
  std::string tactic() const override { return "kernel:lrn"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2 && size_ > 0, kInvalidArgument, name_, "LRN needs rank >= 2 and size > 0");
    int64_t spatial = 1;
    for (size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
    check_launch(x::lrn_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), xs[0],
                            xs[1], spatial, size_, alpha_, beta_, bias_, l.stream),
                 name_, "lrn");
  }

 private:
  std::string name_;
  int size_;
  float alpha_, beta_, bias_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"LRN"}, float32_input, factory<LrnLayer>());

}  // namespace kilnrt::backends::cuda
