// CUDA layer of GatherElements (any 1-, 2-, 4- or 8-byte dtype, int32 / int64 indices). Kernel:
// gather_elements.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/slice_gather/cuda/gather_elements_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class GatherElementsLayer final : public CudaLayer {
 public:
  explicit GatherElementsLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:gather-elements"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    check_launch(k::gather_elements(l.inputs[0].data, to_dims(xs, name_), l.inputs[1].data,
                                    l.inputs[1].dtype == DType::kInt64, to_dims(l.inputs[1].shape, name_), axis,
                                    l.outputs[0].data, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather_elements");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"GatherElements"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
      return sized(n, g);
    },
    factory<GatherElementsLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
