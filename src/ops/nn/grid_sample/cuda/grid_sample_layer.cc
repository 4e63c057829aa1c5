// CUDA layer of GridSample over 4-D inputs, float32 (bilinear / nearest / bicubic; zeros / border / reflection).
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/grid_sample/cuda/grid_sample_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

std::string float32_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

int grid_mode(const ir::Node& n) {
  const std::string m = n.attr_string("mode", std::string("bilinear"));
  return m == "nearest" ? 1 : (m == "bicubic" || m == "cubic") ? 2 : (m == "bilinear" || m == "linear") ? 0 : -1;
}
int grid_pad(const ir::Node& n) {
  const std::string p = n.attr_string("padding_mode", std::string("zeros"));
  return p == "zeros" ? 0 : p == "border" ? 1 : p == "reflection" ? 2 : -1;
}

class GridSampleLayer final : public CudaLayer {
 public:
  explicit GridSampleLayer(const ir::Node& n)
      : name_(n.describe()), mode_(grid_mode(n)), pad_(grid_pad(n)), align_(n.attr_int("align_corners", 0) != 0) {}
  std::string tactic() const override { return "kernel:grid-sample"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& gs = l.inputs[1].shape;
    KILNRT_CHECK(xs.size() == 4 && gs.size() == 4 && gs[3] == 2 && gs[0] == xs[0], kUnsupported, name_,
                 "GridSample supports 4-D X [N, C, H, W] and grid [N, Ho, Wo, 2]");
    check_launch(x::grid_sample_f32(static_cast<const float*>(l.inputs[0].data),
                                    static_cast<const float*>(l.inputs[1].data), static_cast<float*>(l.outputs[0].data),
                                    xs[0], xs[1], xs[2], xs[3], gs[1], gs[2], mode_, pad_, align_, l.stream),
                 name_, "grid_sample");
  }

 private:
  std::string name_;
  int mode_, pad_;
  bool align_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"GridSample"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (grid_mode(n) < 0 || grid_pad(n) < 0) return "GridSample mode / padding_mode";
      if (value_dtype(g, n.inputs.at(1)) != DType::kFloat32) return "the CUDA layer takes a float32 grid";
      return float32_input(n, g);
    },
    factory<GridSampleLayer>());

}  // namespace kilnrt::backends::cuda
