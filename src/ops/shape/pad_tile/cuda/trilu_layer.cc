// CUDA layer of Trilu (any 1-, 2-, 4- or 8-byte dtype; k read on the device). Kernel: trilu.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/pad_tile/cuda/trilu_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class TriluLayer final : public CudaLayer {
 public:
  explicit TriluLayer(const ir::Node& n) : name_(n.describe()), upper_(n.attr_int("upper", 1) != 0) {}
  std::string tactic() const override { return "kernel:trilu"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "Trilu needs rank >= 2");
    const int64_t rows = xs[xs.size() - 2], cols = xs.back();
    if (rows * cols == 0) return;
    const bool has_k = l.inputs.size() > 1 && l.inputs[1].present;
    check_launch(
        k::trilu(l.inputs[0].data, l.outputs[0].data, has_k ? static_cast<const int64_t*>(l.inputs[1].data) : nullptr,
                 l.inputs[0].numel() / (rows * cols), rows, cols, upper_, dtype_size(l.inputs[0].dtype), l.stream),
        name_, "trilu");
  }

 private:
  std::string name_;
  bool upper_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Trilu"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.size() > 1 && !n.inputs[1].empty())
        if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
      return sized(n, g);
    },
    factory<TriluLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
