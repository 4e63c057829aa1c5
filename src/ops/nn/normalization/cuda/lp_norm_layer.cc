// The CUDA layer of LpNormalization (p 1 / 2), on the kernel of lp_norm_kernels.h in the CPU reference's arithmetic.
// Float32; float16 / bfloat16 tensors run as float32 islands (float32_island.h), which round like the CPU reference
// does.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_kernel_io.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/normalization/cuda/lp_norm_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace float32_kernel_io;
namespace la = kilnrt::cuda::kernels::linatt;

class LpNormLayer final : public CudaLayer {
 public:
  explicit LpNormLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)), p_(n.attr_int("p", 2)) {
    KILNRT_CHECK(p_ == 1 || p_ == 2, kInvalidModel, name_, "p must be 1 or 2, got " << p_);
  }
  std::string tactic() const override { return "kernel:lp-norm"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(!xs.empty(), kInvalidArgument, name_, "input must have rank >= 1");
    const int64_t rank = static_cast<int64_t>(xs.size());
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
    check_launch(la::lp_norm(f32_in(l, 0), f32_out(l, 0), outer, xs[axis], inner, static_cast<int>(p_), l.stream),
                 name_, "lp_norm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_, p_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"LpNormalization"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const int64_t p = n.attr_int("p", 2);
      if (p != 1 && p != 2) return "p must be 1 or 2";
      return float32_inputs(n, g, {0});
    },
    factory<LpNormLayer>());

}  // namespace kilnrt::backends::cuda
