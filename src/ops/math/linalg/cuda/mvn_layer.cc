// CUDA layer of MeanVarianceNormalization (float32 data; 16-bit engines run it as a float32 island): each group of
// the non-reduced dims normalised over the `axes` dims. Kernel: mvn.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/dims_mask_layer.h"
#include "ops/math/linalg/cuda/mvn_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels;

class MvnLayer final : public CudaLayer {
 public:
  explicit MvnLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axes_(n.attr_ints("axes", std::vector<int64_t>{0, 2, 3})) {}
  std::string tactic() const override { return "kernel:mvn"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    m::DimsMask d = to_dims_mask(s, node_);
    for (int64_t a : axes_) d.flag[ops::normalize_axis(a, static_cast<int64_t>(s.size()), node_)] = 1;
    int64_t groups = 1, count = 1;
    for (int i = 0; i < d.rank; ++i) (d.flag[i] ? count : groups) *= d.d[i];
    check_launch(m::mvn_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), d,
                            groups, count, l.stream),
                 name_, "mvn");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  std::vector<int64_t> axes_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"MeanVarianceNormalization"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA layer takes float32";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<MvnLayer>(a.node); });

}  // namespace
}  // namespace kilnrt::backends::cuda
