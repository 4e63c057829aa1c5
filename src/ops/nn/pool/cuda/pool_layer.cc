// CUDA layer of MaxPool / AveragePool: 1-D and 2-D pooling over NCHW (pool2d.cu) or NHWC storage (pool2d_nhwc.cu);
// 3-D pooling (pool3d_layer.h) and MaxPool with Indices or on 8-bit integers (max_pool_indices_layer.h) are handed
// over from this registration, so that each op has one registry entry.
#include <algorithm>
#include <cmath>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/pool/cuda/max_pool_indices_layer.h"
#include "ops/nn/pool/cuda/pool2d_kernels.h"
#include "ops/nn/pool/cuda/pool3d_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

class PoolLayer final : public CudaLayer {
 public:
  explicit PoolLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:pool2d"; }
  bool supports_16bit() const override { return true; }
  // 2-D pooling over NHWC storage (pool2d_nhwc.cu; layout_plan.h); not with MaxPool's Indices output.
  bool supports_nhwc() const override {
    return node_.outputs.size() == 1 && node_.attr_ints("kernel_shape", std::vector<int64_t>{}).size() == 2;
  }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& ys = l.outputs[0].shape;
    const bool one_d = xs.size() == 3;
    k::Pool2d p;
    p.max = node_.op_type == "MaxPool";
    p.n = xs[0];
    p.c = xs[1];
    p.h = one_d ? 1 : xs[2];
    p.w = xs.back();
    p.oh = one_d ? 1 : ys[2];
    p.ow = ys.back();
    const size_t sd = xs.size() - 2;
    const auto ks = node_.attr_ints("kernel_shape");
    const auto st = node_.attr_ints("strides", std::vector<int64_t>(sd, 1));
    const auto dil = node_.attr_ints("dilations", std::vector<int64_t>(sd, 1));
    std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
    const std::string auto_pad = node_.attr_string("auto_pad", std::string("NOTSET"));
    const int64_t in_d[2] = {p.h, p.w}, out_d[2] = {p.oh, p.ow};
    if (auto_pad == "VALID") pads.assign(2 * sd, 0);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t d = 0; d < sd; ++d) {
        const int i = one_d ? 1 : static_cast<int>(d);
        const int64_t total = std::max<int64_t>(0, (out_d[i] - 1) * st[d] + (ks[d] - 1) * dil[d] + 1 - in_d[i]);
        pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pads[d + sd] = total - pads[d];
      }
    }
    if (one_d) {
      p.kw = static_cast<int>(ks[0]);
      p.sw = static_cast<int>(st[0]);
      p.dw = static_cast<int>(dil[0]);
      p.pw = static_cast<int>(pads[0]);
    } else {
      p.kh = static_cast<int>(ks[0]);
      p.kw = static_cast<int>(ks[1]);
      p.sh = static_cast<int>(st[0]);
      p.sw = static_cast<int>(st[1]);
      p.dh = static_cast<int>(dil[0]);
      p.dw = static_cast<int>(dil[1]);
      p.ph = static_cast<int>(pads[0]);
      p.pw = static_cast<int>(pads[1]);
    }
    p.count_include_pad = node_.attr_int("count_include_pad", 0) != 0;
    KILNRT_CHECK(l.inputs[0].nhwc == l.outputs[0].nhwc, kInternal, name_, "pooling between NHWC and NCHW storage");
    if (l.inputs[0].nhwc) {
      check_launch(k::pool2d_nhwc(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, p, l.stream),
                   name_, "pool2d_nhwc");
      return;
    }
    check_launch(k::pool2d(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, p, l.stream), name_,
                 "pool2d");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"MaxPool", "AveragePool"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (max_pool_needs_general(n, g)) return max_pool_general_supports(n, g);  // Indices / 8-bit
      if (pool_is_3d(n, g)) return pool3d_supports(n, g);                        // pool3d_layer.h
      const ir::TensorType* t = g.type_of(n.inputs.at(0));
      if (t && t->has_shape && t->shape.size() != 4 && t->shape.size() != 3) return "only 1-D and 2-D pooling";
      return float_input(n, g);
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      if (max_pool_needs_general(a.node, a.graph)) return make_max_pool_general(a);
      if (pool_is_3d(a.node, a.graph)) return make_pool3d(a);
      return std::make_unique<PoolLayer>(a.node);
    });

}  // namespace kilnrt::backends::cuda
