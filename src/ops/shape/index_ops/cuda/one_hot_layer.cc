// CUDA layer of OneHot: depth is a host value (input 1), indices int64 / int32 / float32, values of any 1/2/4/8-byte
// dtype. Kernel: one_hot.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/op_registry.h"
#include "ops/shape/index_ops/cuda/one_hot_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels;

class OneHotLayer final : public CudaLayer {
 public:
  explicit OneHotLayer(const ir::Node& n) : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)) {}
  std::string tactic() const override { return "kernel:onehot"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    KILNRT_CHECK(l.inputs[2].numel() == 2, kInvalidArgument, name_,
                 "values must hold 2 elements [off, on], got " << l.inputs[2].numel());
    const Shape& is = l.inputs[0].shape;
    const int64_t rank = static_cast<int64_t>(is.size()) + 1;
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    const int64_t depth = l.outputs[0].shape[static_cast<size_t>(axis)];
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= is[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis); d < is.size(); ++d) inner *= is[d];
    const DType it = l.inputs[0].dtype;
    const int code = it == DType::kInt64 ? 0 : it == DType::kInt32 ? 1 : 2;
    check_launch(m::onehot(l.inputs[0].data, code, l.inputs[2].data, l.outputs[0].data, outer, depth, inner,
                           dtype_size(l.outputs[0].dtype), l.stream),
                 name_, "onehot");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"OneHot"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (!dtype_is_one_of(value_dtype(g, n.inputs.at(0)), {DType::kInt64, DType::kInt32, DType::kFloat32}))
        return "indices must be int64 / int32 / float32";
      const size_t sz = dtype_size(value_dtype(g, n.inputs.at(2)));
      return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown values dtype";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<OneHotLayer>(a.node); });

}  // namespace
}  // namespace kilnrt::backends::cuda
