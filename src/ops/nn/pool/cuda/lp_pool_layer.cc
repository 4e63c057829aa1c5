// The CUDA layer of LpPool (float32, 1-D to 3-D), on the kernel of lp_pool_kernels.h (one thread per output element,
// following the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/pool/cuda/lp_pool_kernels.h"
#include "ops/nn/pool/cuda/pool3_geometry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- LpPool
// ----------------------------------------------------------------------------------------------------------
class LpPoolLayer final : public CudaLayer {
 public:
  explicit LpPoolLayer(const ir::Node& n) : node_(n), name_(n.describe()), p_(n.attr_int("p", 2)) {}
  std::string tactic() const override { return "kernel:lppool"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const int nd = static_cast<int>(x.shape.size()) - 2;
    KILNRT_CHECK(nd >= 1 && nd <= 3, kUnsupported, name_,
                 "LpPool takes 1-D to 3-D inputs, got " << shape_to_string(x.shape));
    KILNRT_CHECK(p_ >= 1, kInvalidModel, name_, "p must be >= 1, got " << p_);
    gk::LpPool3 q;
    expect_output(l.outputs.at(0), to_pool3(node_, x.shape, q), name_);
    q.p = static_cast<double>(p_);
    check_launch(gk::lp_pool3(static_cast<const float*>(x.data), static_cast<float*>(l.outputs[0].data), q, l.stream),
                 name_, "lp_pool3");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t p_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"LpPool"}, [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
    factory<LpPoolLayer>());

}  // namespace kilnrt::backends::cuda
