// The CUDA layer of RMSNormalization (any axis, broadcast scale), on the kernel of rms_norm_kernels.h in the CPU
// reference's arithmetic. Float32; float16 / bfloat16 tensors run as float32 islands (float32_island.h), which round
// like the CPU reference does.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_kernel_io.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/normalization/cuda/rms_norm_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace float32_kernel_io;
namespace la = kilnrt::cuda::kernels::linatt;

// ---- RMSNormalization ------------------------------------------------------------------------------
class RmsNormLayer final : public CudaLayer {
 public:
  explicit RmsNormLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)), eps_(n.attr_float("epsilon", 1e-5f)) {}
  std::string tactic() const override { return "kernel:rms-norm-row"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(!xs.empty(), kInvalidArgument, name_, "input X must have rank >= 1");
    const int64_t axis = ops::normalize_axis(axis_, static_cast<int64_t>(xs.size()), node_);
    const Shape norm(xs.begin() + axis, xs.end());
    KILNRT_CHECK(norm.size() <= static_cast<size_t>(la::kMaxNormDims), kUnsupported, name_,
                 "normalizing over " << norm.size() << " dims exceeds the CUDA kernel's limit of " << la::kMaxNormDims);
    const Shape& ss = l.inputs[1].shape;
    bool ok = ss.size() <= norm.size();
    la::RmsNormArgs a;
    a.norm_rank = static_cast<int>(norm.size());
    int64_t stride = 1;
    for (size_t i = 0; ok && i < norm.size(); ++i) {
      const size_t nd = norm.size() - 1 - i;
      a.norm_dims[nd] = norm[nd];
      if (i < ss.size()) {
        const int64_t d = ss[ss.size() - 1 - i];
        ok = d == 1 || d == norm[nd];
        a.scale_strides[nd] = d == 1 ? 0 : stride;
        stride *= d;
      }
    }
    KILNRT_CHECK(ok, kInvalidArgument, name_,
                 "scale of shape " << shape_to_string(ss) << " does not broadcast to " << shape_to_string(norm));
    a.len = shape_numel(norm);
    a.rows = a.len > 0 ? l.inputs[0].numel() / a.len : 0;
    a.x = f32_in(l, 0);
    a.scale = f32_in(l, 1);
    a.y = f32_out(l, 0);
    a.eps = eps_;
    check_launch(la::rms_norm(a, l.stream), name_, "rms_norm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_;
  double eps_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"RMSNormalization"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (!has(n, 0) || !has(n, 1)) return "X and scale are required";
      return float32_inputs(n, g, {0, 1});
    },
    factory<RmsNormLayer>());

}  // namespace kilnrt::backends::cuda
