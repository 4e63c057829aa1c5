// CUDA layer of ConvTranspose, 1-D / 2-D / 3-D, float32, on direct kernels: each output element gathers its
// contributions, no atomics (1-D / 2-D in conv_transpose2d.cu, 3-D in conv_transpose3d.cu).
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/conv_transpose/cuda/conv_transpose2d_kernels.h"
#include "ops/nn/conv_transpose/cuda/conv_transpose3d_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

// ---- ConvTranspose (1-D / 2-D / 3-D) -----------------------------------------------------------------------------
int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

class ConvTransposeLayer final : public CudaLayer {
 public:
  explicit ConvTransposeLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:conv-transpose2d-direct"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    const Shape& ys = l.outputs[0].shape;
    KILNRT_CHECK(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size() && ys.size() == xs.size(), kUnsupported,
                 name_, "the CUDA ConvTranspose takes 1-D to 3-D inputs");
    const int nd = static_cast<int>(xs.size()) - 2;
    const auto st = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const auto dil = node_.attr_ints("dilations", std::vector<int64_t>(nd, 1));
    const auto opad = node_.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
    std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    const std::string auto_pad = node_.attr_string("auto_pad", std::string("NOTSET"));
    const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    KILNRT_CHECK(st.size() == static_cast<size_t>(nd) && dil.size() == static_cast<size_t>(nd) &&
                     opad.size() == static_cast<size_t>(nd) && pads.size() == static_cast<size_t>(2 * nd),
                 kInvalidModel, name_, "strides / dilations / output_padding / pads sizes");
    std::vector<int64_t> begin(nd);
    for (int i = 0; i < nd; ++i) {
      const int64_t in = xs[2 + i], kern = ws[2 + i], out = ys[2 + i];
      if (node_.has_attr("output_shape") || same) {
        // The output size is known (inference applied output_shape / SAME): the pads follow from it.
        const int64_t total = st[i] * (in - 1) + opad[i] + (kern - 1) * dil[i] + 1 - out;
        begin[i] = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
      } else {
        begin[i] = auto_pad == "VALID" ? 0 : pads[i];
      }
    }
    const int64_t group = node_.attr_int("group", 1);
    const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
    if (nd == 3) {  // conv_transpose3d.cu
      kilnrt::cuda::kernels::vol::ConvT3 q;
      q.n = xs[0];
      q.c = xs[1];
      q.k = ys[1];
      q.groups = group;
      KILNRT_CHECK(group > 0 && q.c % group == 0 && q.k % group == 0 && ws[0] == q.c && ws[1] * group == q.k,
                   kInvalidArgument, name_, "channels / group / weight shape mismatch");
      for (int i = 0; i < 3; ++i) {
        q.in[i] = xs[2 + i];
        q.out[i] = ys[2 + i];
        q.kern[i] = ws[2 + i];
        q.s[i] = st[i];
        q.d[i] = dil[i];
        q.pad_begin[i] = begin[i];
      }
      check_launch(kilnrt::cuda::kernels::vol::conv_transpose3d_f32(
                       static_cast<const float*>(l.inputs[0].data), static_cast<const float*>(l.inputs[1].data),
                       has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                       static_cast<float*>(l.outputs[0].data), q, l.stream),
                   name_, "conv_transpose3d");
      return;
    }
    x::ConvT2d p;
    p.n = xs[0];
    p.c = xs[1];
    p.k = ys[1];
    p.groups = static_cast<int>(group);
    KILNRT_CHECK(group > 0 && p.c % group == 0 && p.k % group == 0 && ws[0] == p.c && ws[1] * group == p.k,
                 kInvalidArgument, name_, "channels / group / weight shape mismatch");
    if (nd == 1) {
      p.h = p.oh = 1;
      p.w = xs[2];
      p.ow = ys[2];
      p.kw = static_cast<int>(ws[2]);
      p.sw = static_cast<int>(st[0]);
      p.dw = static_cast<int>(dil[0]);
      p.pw = static_cast<int>(begin[0]);
    } else {
      p.h = xs[2];
      p.w = xs[3];
      p.oh = ys[2];
      p.ow = ys[3];
      p.kh = static_cast<int>(ws[2]);
      p.kw = static_cast<int>(ws[3]);
      p.sh = static_cast<int>(st[0]);
      p.sw = static_cast<int>(st[1]);
      p.dh = static_cast<int>(dil[0]);
      p.dw = static_cast<int>(dil[1]);
      p.ph = static_cast<int>(begin[0]);
      p.pw = static_cast<int>(begin[1]);
    }
    check_launch(x::conv_transpose2d_f32(static_cast<const float*>(l.inputs[0].data),
                                         static_cast<const float*>(l.inputs[1].data),
                                         has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                                         static_cast<float*>(l.outputs[0].data), p, l.stream),
                 name_, "conv_transpose2d");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"ConvTranspose"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
          return "the CUDA layer takes float32";
      const ir::TensorType* t = g.type_of(n.inputs.at(0));
      if (t && t->has_shape && (t->shape.size() < 3 || t->shape.size() > 5))
        return "the CUDA ConvTranspose takes 1-D to 3-D inputs";
      return "";
    },
    factory<ConvTransposeLayer>());

}  // namespace kilnrt::backends::cuda
