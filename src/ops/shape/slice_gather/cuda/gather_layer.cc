// The CUDA layer of Gather (int64 indices, any 1-, 2-, 4- or 8-byte dtype): kernels::gather over the
// [outer, axis, inner] view of the data.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/strided_copy_layer.h"
#include "ops/op_registry.h"
#include "ops/shape/slice_gather/cuda/gather_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class GatherLayer final : public CudaLayer {
 public:
  explicit GatherLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:gather"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
    check_launch(k::gather(l.inputs[0].data, static_cast<const int64_t*>(l.inputs[1].data), l.outputs[0].data, outer,
                           xs[axis], l.inputs[1].numel(), inner, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

KILNRT_REGISTER_CUDA_LAYER(
    {"Gather"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(1)) != DType::kInt64) return "Gather indices must be int64";
      return any_dtype(n, g);
    },
    factory<GatherLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
