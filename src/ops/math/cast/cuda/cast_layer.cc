// CUDA layer of Cast between the dtypes of kernels::cast (cast_dtype_code). Kernel: src/cuda/kernels/cast.cu, shared
// with the executor's conversions.
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class CastLayer final : public CudaLayer {
 public:
  explicit CastLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:cast"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const int from = cast_dtype_code(l.inputs[0].dtype), to = cast_dtype_code(l.outputs[0].dtype);
    KILNRT_CHECK(from >= 0 && to >= 0, kUnsupported, name_,
                 "Cast " << dtype_name(l.inputs[0].dtype) << " -> " << dtype_name(l.outputs[0].dtype));
    check_launch(k::cast(l.inputs[0].data, from, l.outputs[0].data, to, l.outputs[0].numel(), l.stream), name_, "cast");
  }

 private:
  std::string name_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"Cast"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const DType to = static_cast<DType>(n.attr_int("to"));
      if (cast_dtype_code(value_dtype(g, n.inputs.at(0))) < 0 || cast_dtype_code(to) < 0)
        return "unsupported cast dtypes";
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<CastLayer>(a.node); });

}  // namespace kilnrt::backends::cuda
