// CUDA layer of EyeLike: ones on the k-th diagonal of a 2-D output of any dtype of 1, 2, 4 or 8 bytes.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/shape/index_ops/cuda/eye_like_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

// ---- EyeLike -----------------------------------------------------------------------------------------------------
uint64_t one_bits(DType t) {
  switch (t) {
    case DType::kFloat32: return 0x3f800000ULL;
    case DType::kFloat64: return 0x3ff0000000000000ULL;
    case DType::kFloat16: return 0x3c00ULL;
    case DType::kBFloat16: return 0x3f80ULL;
    default: return 1;  // integers and bool
  }
}

class EyeLikeLayer final : public CudaLayer {
 public:
  explicit EyeLikeLayer(const ir::Node& n) : name_(n.describe()), k_(n.attr_int("k", 0)) {}
  std::string tactic() const override { return "kernel:eye"; }
  void enqueue(LayerLaunch& l) override {
    const LayerOutput& y = l.outputs[0];
    KILNRT_CHECK(y.shape.size() == 2, kInvalidArgument, name_, "EyeLike needs a 2-D input");
    check_launch(x::eye_like(y.data, y.shape[0], y.shape[1], k_, one_bits(y.dtype), dtype_size(y.dtype), l.stream),
                 name_, "eye_like");
  }

 private:
  std::string name_;
  int64_t k_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"EyeLike"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const DType t = n.has_attr("dtype") ? static_cast<DType>(n.attr_int("dtype")) : value_dtype(g, n.inputs.at(0));
      const size_t sz = dtype_size(t);
      return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
    },
    factory<EyeLikeLayer>());

}  // namespace kilnrt::backends::cuda
