// The CUDA layer of AffineGrid (float32, 2-D / 3-D), on the kernel of affine_grid_kernels.h (one thread per output
// element, following the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/affine_grid/cuda/affine_grid_kernels.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- AffineGrid
// ------------------------------------------------------------------------------------------------------
class AffineGridLayer final : public CudaLayer {
 public:
  explicit AffineGridLayer(const ir::Node& n)
      : name_(n.describe()), align_corners_(n.attr_int("align_corners", 0) != 0) {}
  std::string tactic() const override { return "kernel:affine-grid"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const std::vector<int64_t> size = ops::tensor_to_int64s(host_value(l, 1, name_, "size"));
    KILNRT_CHECK(size.size() == 4 || size.size() == 5, kInvalidModel, name_,
                 "size must be [N, C, H, W] or [N, C, D, H, W], got " << size.size() << " values");
    gk::AffineGridGeom g;
    g.nd = static_cast<int>(size.size()) - 2;
    g.n = size[0];
    const int64_t nd = g.nd;
    const Shape& ts = l.inputs.at(0).shape;
    KILNRT_CHECK(
        ts == (Shape{g.n, nd, nd + 1}), kInvalidModel, name_,
        "theta has shape " << shape_to_string(ts) << ", expected [" << g.n << ", " << nd << ", " << nd + 1 << "]");
    for (size_t d = 2; d < size.size(); ++d)
      KILNRT_CHECK(size[d] >= 0, kInvalidModel, name_, "negative size " << size[d]);
    g.depth = nd == 3 ? size[2] : 1;
    g.height = size[nd == 3 ? 3 : 2];
    g.width = size[nd == 3 ? 4 : 3];
    g.align_corners = align_corners_;
    Shape want{g.n};
    if (nd == 3) want.push_back(g.depth);
    want.push_back(g.height);
    want.push_back(g.width);
    want.push_back(nd);
    expect_output(l.outputs.at(0), want, name_);
    check_launch(gk::affine_grid(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), g,
                                 l.stream),
                 name_, "affine_grid");
  }

 private:
  std::string name_;
  bool align_corners_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"AffineGrid"}, [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
    factory<AffineGridLayer>());

}  // namespace kilnrt::backends::cuda
