// CUDA layer of CastLike: the Cast kernel to the dtype of the second input (the concrete dtypes are read at run
// time).
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class CastLikeLayer final : public CudaLayer {
 public:
  explicit CastLikeLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:cast"; }
  void enqueue(LayerLaunch& l) override {
    const int from = cast_dtype_code(l.inputs[0].dtype), to = cast_dtype_code(l.outputs[0].dtype);
    KILNRT_CHECK(from >= 0 && to >= 0, kUnsupported, name_,
                 "CastLike " << dtype_name(l.inputs[0].dtype) << " -> " << dtype_name(l.outputs[0].dtype));
    check_launch(k::cast(l.inputs[0].data, from, l.outputs[0].data, to, l.outputs[0].numel(), l.stream), name_, "cast");
  }

 private:
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"CastLike"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      // An unknown dtype (a value computed on the host, such as an If's output in an expanded
      // function body) is checked at run time, where the layer gets the concrete dtypes.
      for (size_t i = 0; i < 2; ++i) {
        const DType t = value_dtype(g, n.inputs.at(i));
        if (t != DType::kUndefined && cast_dtype_code(t) < 0) return "unsupported cast dtypes";
      }
      return "";
    },
    factory<CastLikeLayer>());

}  // namespace kilnrt::backends::cuda
