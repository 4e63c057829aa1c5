// CUDA layer of BitCast: the bytes copied into the output of the new dtype (cuda/kernels/copy_bytes.h).
#include "ops/cuda/cuda_layer.h"
#include "cuda/kernels/copy_bytes.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class BitCastLayer final : public CudaLayer {
 public:
  explicit BitCastLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:bitcast-copy"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(dtype_size(x.dtype) == dtype_size(y.dtype) && x.numel() == y.numel(), kInternal, name_,
                 "BitCast " << dtype_name(x.dtype) << " " << shape_to_string(x.shape) << " -> " << dtype_name(y.dtype)
                            << " " << shape_to_string(y.shape) << " changes the byte count");
    check_launch(k::copy_bytes(y.data, x.data, x.numel() * dtype_size(x.dtype), l.stream), name_, "copy_bytes");
  }

 private:
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"BitCast"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.empty() || n.outputs.empty()) return "needs one input and one output";
      const DType in = value_dtype(g, n.inputs[0]), out = value_dtype(g, n.outputs[0]);
      if (in == DType::kUndefined || out == DType::kUndefined) return "unknown dtype";
      if (dtype_size(in) != dtype_size(out) || dtype_size(in) == 0)
        return std::string("dtypes of different widths: ") + dtype_name(in) + " -> " + dtype_name(out);
      return "";
    },
    factory<BitCastLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
