// CUDA layer of InstanceNormalization / GroupNormalization: one group-norm kernel (instance norm is one group per
// channel), float32.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/normalization/cuda/group_norm_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

// ---- Instance / Group normalisation, LRN ----------------------------------------------------------------------------
class GroupNormLayer final : public CudaLayer {
 public:
  explicit GroupNormLayer(const ir::Node& n)
      : name_(n.describe()),
        instance_(n.op_type == "InstanceNormalization"),
        groups_(instance_ ? 0 : n.attr_int("num_groups")),
        eps_(n.attr_float("epsilon", 1e-5f)) {}
  std::string tactic() const override { return "kernel:group-norm"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "input needs rank >= 2");
    const int64_t n = xs[0], c = xs[1];
    int64_t spatial = 1;
    for (size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
    const int64_t groups = instance_ ? c : groups_;
    KILNRT_CHECK(groups > 0 && c % groups == 0, kInvalidArgument, name_,
                 "num_groups " << groups << " does not divide the " << c << " channels");
    const bool has_scale = l.inputs.size() > 1 && l.inputs[1].present;
    const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
    // GroupNormalization-18 takes per-group scale/bias, -21 per-channel ones: told apart by their size.
    const bool per_channel = instance_ || (has_scale ? l.inputs[1].numel() == c : true);
    check_launch(
        x::group_norm_f32(static_cast<const float*>(l.inputs[0].data),
                          has_scale ? static_cast<const float*>(l.inputs[1].data) : nullptr,
                          has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                          static_cast<float*>(l.outputs[0].data), n, c, spatial, groups, per_channel, eps_, l.stream),
        name_, "group_norm");
  }

 private:
  std::string name_;
  bool instance_;
  int64_t groups_;
  float eps_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"InstanceNormalization", "GroupNormalization"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
          return "the CUDA layer takes float32";
      return "";
    },
    factory<GroupNormLayer>());

}  // namespace kilnrt::backends::cuda
