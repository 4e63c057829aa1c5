// CUDA layers of Pad (constant / reflect / edge / wrap; pads, constant and axes read on the host: they must be
// constants or shape computations) and Tile (repeats on the host), both on one pad kernel.
#include <cstring>

#include "ops/cuda/cuda_layer.h"
#include "ops/shape/pad_tile/cuda/pad_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels;

std::vector<int64_t> host_ints(const LayerLaunch& l, size_t i) {
  return i < l.inputs.size() && l.inputs[i].present && l.inputs[i].host ? ops::tensor_to_int64s(*l.inputs[i].host)
                                                                        : std::vector<int64_t>{};
}

x::PadPlan plan_for(const Shape& in, const Shape& out, const std::string& name) {
  KILNRT_CHECK(in.size() <= static_cast<size_t>(k::kMaxDims) && in.size() == out.size(), kUnsupported, name,
               "rank " << in.size() << " (the CUDA layer takes up to " << k::kMaxDims << ")");
  x::PadPlan p;
  p.rank = static_cast<int>(in.size());
  for (int d = 0; d < p.rank; ++d) {
    p.in_dims[d] = in[d];
    p.out_dims[d] = out[d];
  }
  return p;
}

class PadLayer final : public CudaLayer {
 public:
  explicit PadLayer(const ir::Node& n) : node_(n), name_(n.describe()) {
    const std::string m = n.attr_string("mode", std::string("constant"));
    mode_ = m == "reflect" ? 1 : m == "edge" ? 2 : m == "wrap" ? 3 : 0;
  }
  std::string tactic() const override { return "kernel:pad"; }
  std::vector<int> host_inputs() const override { return {1, 2, 3}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& xin = l.inputs[0];
    const Shape& xs = xin.shape;
    const int rank = static_cast<int>(xs.size());
    x::PadPlan p = plan_for(xs, l.outputs[0].shape, name_);
    p.mode = mode_;
    std::vector<int64_t> pads = node_.has_attr("pads") ? node_.attr_ints("pads") : host_ints(l, 1);
    std::vector<int64_t> axes = host_ints(l, 3);
    if (axes.empty())
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    KILNRT_CHECK(pads.size() == 2 * axes.size(), kInvalidModel, name_,
                 "Pad: " << pads.size() << " pads for " << axes.size() << " axes");
    for (size_t i = 0; i < axes.size(); ++i) p.begin[ops::normalize_axis(axes[i], rank, node_)] = pads[i];
    if (mode_ != 0)
      for (int d = 0; d < rank; ++d)
        KILNRT_CHECK(xs[d] > 0 || p.out_dims[d] == 0, kInvalidArgument, name_,
                     "Pad: cannot pad an empty dim " << d << " in a non-constant mode");
    const size_t es = dtype_size(xin.dtype);
    if (mode_ == 0) {
      if (node_.has_attr("value")) {
        const float v = node_.attr_float("value");
        if (xin.dtype == DType::kFloat32)
          std::memcpy(&p.value_bits, &v, 4);
        else if (xin.dtype == DType::kFloat64) {
          const double dv = v;
          std::memcpy(&p.value_bits, &dv, 8);
        } else
          p.value_bits = static_cast<uint64_t>(static_cast<int64_t>(v));
      } else if (l.inputs.size() > 2 && l.inputs[2].present && l.inputs[2].host) {
        const Tensor& c = *l.inputs[2].host;
        KILNRT_CHECK(c.dtype() == xin.dtype && c.numel() == 1, kInvalidModel, name_,
                     "Pad: constant_value must be one element of the input's dtype");
        std::memcpy(&p.value_bits, c.raw(), es);
      }
    }
    check_launch(x::pad(xin.data, l.outputs[0].data, p, es, l.stream), name_, "pad");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int mode_ = 0;
};

class TileLayer final : public CudaLayer {
 public:
  explicit TileLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:pad"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    x::PadPlan p = plan_for(l.inputs[0].shape, l.outputs[0].shape, name_);
    p.mode = 3;  // wrap from begin 0: y[o] = x[o % in]
    check_launch(x::pad(l.inputs[0].data, l.outputs[0].data, p, dtype_size(l.inputs[0].dtype), l.stream), name_, "pad");
  }

 private:
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

std::string sized(const ir::Node& n, const ir::Graph& g) {
  const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

KILNRT_REGISTER_CUDA_LAYER(
    {"Pad"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const std::string m = n.attr_string("mode", std::string("constant"));
      if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap") return "Pad mode " + m;
      return sized(n, g);
    },
    factory<PadLayer>());
KILNRT_REGISTER_CUDA_LAYER({"Tile"}, sized, factory<TileLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
