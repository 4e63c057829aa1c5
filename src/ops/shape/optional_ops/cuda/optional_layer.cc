// CUDA layers of OptionalGetElement (a view of its input) and OptionalHasElement (a bool written on the device) on
// plain tensors. Kernel: optional.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/optional_ops/cuda/optional_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class OptionalGetLayer final : public CudaLayer {
 public:
  std::string tactic() const override { return "alias"; }
  bool supports_16bit() const override { return true; }
  bool is_alias() const override { return true; }
  void enqueue(LayerLaunch&) override {}
};

class OptionalHasLayer final : public CudaLayer {
 public:
  explicit OptionalHasLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:optional-has-element"; }
  bool supports_16bit() const override { return true; }  // writes a bool; reads nothing
  void enqueue(LayerLaunch& l) override {
    const bool present = !l.inputs.empty() && l.inputs[0].present;
    check_launch(k::fill_bool(static_cast<bool*>(l.outputs.at(0).data), present, l.stream), name_, "fill_bool");
  }

 private:
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"OptionalGetElement"},
    [](const ir::Node& n, const ir::Graph&) -> std::string {
      if (n.inputs.empty() || n.inputs[0].empty()) return "an empty optional (the input is omitted)";
      return "";
    },
    [](const LayerCreateArgs&) -> std::unique_ptr<CudaLayer> { return std::make_unique<OptionalGetLayer>(); });
KILNRT_REGISTER_CUDA_LAYER(
    {"OptionalHasElement"}, [](const ir::Node&, const ir::Graph&) { return std::string(); },
    factory<OptionalHasLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
