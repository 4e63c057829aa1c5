// The CUDA layer of DeformConv (float32, 2-D: offsets, mask, groups, offset groups), on the kernel of
// deform_conv_kernels.h (one thread per output element, following the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/deform_conv/cuda/deform_conv_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- DeformConv
// ------------------------------------------------------------------------------------------------------
class DeformConvLayer final : public CudaLayer {
 public:
  explicit DeformConvLayer(const ir::Node& n)
      : name_(n.describe()),
        group_(n.attr_int("group", 1)),
        og_(n.attr_int("offset_group", 1)),
        dil_(n.attr_ints("dilations", std::vector<int64_t>{1, 1})),
        st_(n.attr_ints("strides", std::vector<int64_t>{1, 1})),
        pads_(n.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0})) {
    KILNRT_CHECK(dil_.size() == 2 && st_.size() == 2 && pads_.size() == 4, kInvalidModel, name_,
                 "dilations / strides need 2 values and pads 4");
  }
  std::string tactic() const override { return "kernel:deform-conv2d"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const LayerTensor& w = l.inputs.at(1);
    const LayerTensor& off = l.inputs.at(2);
    KILNRT_CHECK(x.shape.size() == 4 && w.shape.size() == 4 && off.shape.size() == 4, kUnsupported, name_,
                 "DeformConv supports 2-D inputs: X [N, C, H, W], W [OC, C/group, kH, kW], offset [N, *, oH, oW]");
    gk::DeformConvArgs a;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.h = x.shape[2];
    a.w = x.shape[3];
    a.oc = w.shape[0];
    a.kh = w.shape[2];
    a.kw = w.shape[3];
    a.group = group_;
    a.offset_group = og_;
    KILNRT_CHECK(group_ > 0 && og_ > 0 && a.c == w.shape[1] * group_ && a.oc % group_ == 0 && a.c % og_ == 0,
                 kInvalidModel, name_,
                 "inconsistent channels: X " << shape_to_string(x.shape) << ", W " << shape_to_string(w.shape)
                                             << ", group " << group_ << ", offset_group " << og_);
    a.oh = off.shape[2];
    a.ow = off.shape[3];
    const int64_t exp_oh = (a.h + pads_[0] + pads_[2] - ((a.kh - 1) * dil_[0] + 1)) / st_[0] + 1;
    const int64_t exp_ow = (a.w + pads_[1] + pads_[3] - ((a.kw - 1) * dil_[1] + 1)) / st_[1] + 1;
    const int64_t taps = og_ * a.kh * a.kw;
    KILNRT_CHECK(off.shape[0] == a.n && off.shape[1] == taps * 2 && a.oh == exp_oh && a.ow == exp_ow, kInvalidModel,
                 name_,
                 "offset has shape " << shape_to_string(off.shape) << ", expected [" << a.n << ", " << taps * 2 << ", "
                                     << exp_oh << ", " << exp_ow << "]");
    if (l.inputs.size() > 3 && l.inputs[3].present) {
      KILNRT_CHECK(l.inputs[3].numel() == a.oc, kInvalidModel, name_, "B must have " << a.oc << " values");
      a.bias = static_cast<const float*>(l.inputs[3].data);
    }
    if (l.inputs.size() > 4 && l.inputs[4].present) {
      KILNRT_CHECK(l.inputs[4].shape == (Shape{a.n, taps, a.oh, a.ow}), kInvalidModel, name_,
                   "mask has shape " << shape_to_string(l.inputs[4].shape) << ", expected [" << a.n << ", " << taps
                                     << ", " << a.oh << ", " << a.ow << "]");
      a.mask = static_cast<const float*>(l.inputs[4].data);
    }
    expect_output(l.outputs.at(0), Shape{a.n, a.oc, a.oh, a.ow}, name_);
    a.x = static_cast<const float*>(x.data);
    a.weight = static_cast<const float*>(w.data);
    a.offset = static_cast<const float*>(off.data);
    a.y = static_cast<float*>(l.outputs[0].data);
    for (int i = 0; i < 2; ++i) {
      a.stride[i] = st_[i];
      a.dil[i] = dil_[i];
      a.pad[i] = pads_[i];
    }
    check_launch(gk::deform_conv2d(a, l.stream), name_, "deform_conv2d");
  }

 private:
  std::string name_;
  int64_t group_, og_;
  std::vector<int64_t> dil_, st_, pads_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"DeformConv"},
    [](const ir::Node& n, const ir::Graph& g) {
      return float32_inputs(n, g, {0, 1, 2, 3, 4});
    },
    factory<DeformConvLayer>());

}  // namespace kilnrt::backends::cuda
