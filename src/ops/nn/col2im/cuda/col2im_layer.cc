// The CUDA layer of Col2Im (float32, N-D), on the kernel of col2im_kernels.h (one thread per output element, following
// the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/col2im/cuda/col2im_kernels.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- Col2Im
// ----------------------------------------------------------------------------------------------------------
class Col2ImLayer final : public CudaLayer {
 public:
  explicit Col2ImLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:col2im"; }
  std::vector<int> host_inputs() const override { return {1, 2}; }
  void enqueue(LayerLaunch& l) override {
    const std::vector<int64_t> image = ops::tensor_to_int64s(host_value(l, 1, name_, "image_shape"));
    const std::vector<int64_t> block = ops::tensor_to_int64s(host_value(l, 2, name_, "block_shape"));
    const size_t nd = image.size();
    KILNRT_CHECK(
        nd >= 1 && block.size() == nd, kInvalidModel, name_,
        "image_shape and block_shape must have the same length >= 1 (got " << nd << " and " << block.size() << ")");
    KILNRT_CHECK(nd <= static_cast<size_t>(gk::kMaxRank), kUnsupported, name_,
                 nd << " spatial dims (the CUDA layer takes up to " << gk::kMaxRank << ")");
    const std::vector<int64_t> dil = node_.attr_ints("dilations", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> strides = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    KILNRT_CHECK(dil.size() == nd && strides.size() == nd && pads.size() == 2 * nd, kInvalidModel, name_,
                 "dilations / strides need " << nd << " values and pads " << 2 * nd);
    gk::Col2ImGeom g;
    g.nd = static_cast<int>(nd);
    for (size_t d = 0; d < nd; ++d) {
      KILNRT_CHECK(block[d] > 0 && dil[d] > 0 && strides[d] > 0 && image[d] >= 0, kInvalidModel, name_,
                   "block_shape, dilations and strides must be positive");
      const int64_t n = (image[d] + pads[d] + pads[d + nd] - dil[d] * (block[d] - 1) - 1) / strides[d] + 1;
      KILNRT_CHECK(n >= 1, kInvalidModel, name_, "no block position fits along spatial dim " << d);
      g.image[d] = image[d];
      g.block[d] = block[d];
      g.blocks[d] = n;
      g.dil[d] = dil[d];
      g.stride[d] = strides[d];
      g.pad[d] = pads[d];
      g.k_size *= block[d];
      g.l_size *= n;
    }
    const Shape& s = l.inputs.at(0).shape;
    KILNRT_CHECK(s.size() == 3 && s[1] % g.k_size == 0 && s[2] == g.l_size, kInvalidModel, name_,
                 "input " << shape_to_string(s) << " must be [N, C * " << g.k_size << ", " << g.l_size << "]");
    g.batch = s[0];
    g.channels = s[1] / g.k_size;
    Shape want{g.batch, g.channels};
    want.insert(want.end(), image.begin(), image.end());
    expect_output(l.outputs.at(0), want, name_);
    check_launch(
        gk::col2im(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), g, l.stream),
        name_, "col2im");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"Col2Im"}, [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
    factory<Col2ImLayer>());

}  // namespace kilnrt::backends::cuda
