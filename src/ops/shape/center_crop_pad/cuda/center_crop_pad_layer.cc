// The CUDA layer of CenterCropPad (any element size), on the kernel of center_crop_pad_kernels.h (one thread per output
// element, following the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/center_crop_pad/cuda/center_crop_pad_kernels.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- CenterCropPad
// ---------------------------------------------------------------------------------------------------
class CenterCropPadLayer final : public CudaLayer {
 public:
  explicit CenterCropPadLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axes_(n.attr_ints("axes", std::vector<int64_t>{})) {}
  std::string tactic() const override { return "kernel:center-crop-pad"; }
  std::vector<int> host_inputs() const override { return {1}; }
  bool supports_16bit() const override { return true; }  // elements are moved, not computed
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const std::vector<int64_t> lengths = ops::tensor_to_int64s(host_value(l, 1, name_, "shape"));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILNRT_CHECK(rank >= 1 && rank <= gk::kMaxRank, kUnsupported, name_,
                 "rank " << rank << " (the CUDA layer takes 1 to " << gk::kMaxRank << ")");
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    KILNRT_CHECK(lengths.size() == axes.size(), kInvalidModel, name_,
                 "shape has " << lengths.size() << " values for " << axes.size() << " axes");
    Shape out = x.shape;
    for (size_t i = 0; i < axes.size(); ++i) {
      KILNRT_CHECK(lengths[i] >= 0, kInvalidModel, name_, "negative target length " << lengths[i]);
      out[static_cast<size_t>(ops::normalize_axis(axes[i], rank, node_))] = lengths[i];
    }
    expect_output(l.outputs.at(0), out, name_);
    KILNRT_CHECK(l.outputs[0].dtype == x.dtype, kInternal, name_, "output dtype differs from the input's");
    gk::CropPad c;
    c.rank = static_cast<int>(rank);
    for (int a = 0; a < c.rank; ++a) {
      c.in[a] = x.shape[a];
      c.out[a] = out[a];
      c.src0[a] = x.shape[a] > out[a] ? (x.shape[a] - out[a]) / 2 : 0;
      c.dst0[a] = out[a] > x.shape[a] ? (out[a] - x.shape[a]) / 2 : 0;
      c.len[a] = std::min(x.shape[a], out[a]);
    }
    check_launch(gk::center_crop_pad(x.data, l.outputs[0].data, dtype_size(x.dtype), c, l.stream), name_,
                 "center_crop_pad");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  std::vector<int64_t> axes_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"CenterCropPad"}, any_element_size, factory<CenterCropPadLayer>());

}  // namespace kilnrt::backends::cuda
