// CUDA layer of MaxUnpool (float32 data, int64 indices; 16-bit engines run it as a float32 island): output_shape
// (input 2) is a host value when given; indices are flat positions in the default unpooled shape. Kernels:
// max_unpool.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/dims_mask_layer.h"
#include "ops/nn/detection/cuda/max_unpool_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels;

class MaxUnpoolLayer final : public CudaLayer {
 public:
  explicit MaxUnpoolLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:maxunpool"; }
  std::vector<int> host_inputs() const override { return {2}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 3, kInvalidArgument, name_, "X must be [N, C, spatial...]");
    KILNRT_CHECK(l.inputs[1].shape == xs, kInvalidArgument, name_,
                 "I " << shape_to_string(l.inputs[1].shape) << " differs from X " << shape_to_string(xs));
    // The default unpooled shape (indices are flat positions there), as the CPU reference computes it.
    const size_t nd = xs.size() - 2;
    const std::vector<int64_t> k = node_.attr_ints("kernel_shape");
    const std::vector<int64_t> s = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> p = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    KILNRT_CHECK(k.size() == nd && s.size() == nd && p.size() == 2 * nd, kInvalidModel, name_,
                 "kernel_shape/strides/pads do not match the input rank");
    Shape dflt = xs;
    for (size_t i = 0; i < nd; ++i) dflt[2 + i] = (xs[2 + i] - 1) * s[i] + k[i] - p[i] - p[nd + i];
    const Shape& out = l.outputs[0].shape;
    KILNRT_CHECK(out.size() == dflt.size(), kInvalidArgument, name_, "output_shape has the wrong rank");
    for (size_t i = 0; i < out.size(); ++i)
      KILNRT_CHECK(
          out[i] >= dflt[i], kInvalidArgument, name_,
          "output_shape " << shape_to_string(out) << " is smaller than the unpooled shape " << shape_to_string(dflt));
    check_launch(
        m::maxunpool_f32(static_cast<const float*>(l.inputs[0].data), static_cast<const int64_t*>(l.inputs[1].data),
                         l.inputs[0].numel(), static_cast<float*>(l.outputs[0].data), to_dims_mask(dflt, node_),
                         to_dims_mask(out, node_), l.stream),
        name_, "maxunpool");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"MaxUnpool"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA layer takes float32";
      return value_dtype(g, n.inputs.at(1)) == DType::kInt64 ? "" : "indices must be int64";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<MaxUnpoolLayer>(a.node); });

}  // namespace
}  // namespace kilnrt::backends::cuda
