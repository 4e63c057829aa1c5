// 3-D MaxPool / AveragePool (pool3d_layer.h): geometry from the CPU reference's helpers (ops/nn/nn_common.h:
// kernel_shape, strides, dilations, pads, auto_pad, ceil_mode), one gather kernel (pool3d.cu).
#include "ops/nn/pool/cuda/pool3d_layer.h"

#include "ops/nn/pool/cuda/pool3d_kernels.h"
#include "ops/nn/nn_common.h"

namespace kilnrt::backends::cuda {
namespace {

namespace v = kilnrt::cuda::kernels::vol;

class Pool3dLayer final : public CudaLayer {
 public:
  explicit Pool3dLayer(const ir::Node& n)
      : node_(n),
        name_(n.describe()),
        max_(n.op_type == "MaxPool"),
        include_pad_(n.attr_int("count_include_pad", 0) != 0) {}
  std::string tactic() const override { return max_ ? "kernel:maxpool3d" : "kernel:avgpool3d"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(x.shape.size() == 5, kUnsupported, name_,
                 "3-D pooling takes a 5-D input, got " << shape_to_string(x.shape));
    KILNRT_CHECK(x.dtype == DType::kFloat32, kInternal, name_, "3-D pooling runs on float32");
    ops::nn::SpatialParams sp = ops::nn::read_spatial_params(node_, 3, {}, true);
    const std::vector<int64_t> in_sp(x.shape.begin() + 2, x.shape.end());
    const std::vector<int64_t> out_sp = ops::nn::pooled_output_dims(sp, in_sp, node_);
    const ops::nn::Geometry3 g = ops::nn::make_geometry3(sp, in_sp, out_sp, node_);
    const Shape expect{x.shape[0], x.shape[1], out_sp[0], out_sp[1], out_sp[2]};
    KILNRT_CHECK(l.outputs.at(0).shape == expect, kInternal, name_,
                 "output shape " << shape_to_string(l.outputs[0].shape) << ", expected " << shape_to_string(expect));
    v::Pool3 p;
    p.planes = x.shape[0] * x.shape[1];
    for (int i = 0; i < 3; ++i) {
      p.in[i] = g.in[i];
      p.out[i] = g.out[i];
      p.k[i] = g.k[i];
      p.s[i] = g.s[i];
      p.d[i] = g.d[i];
      p.pad_begin[i] = g.pad_begin[i];
      p.pad_end[i] = g.pad_end[i];
    }
    p.max = max_;
    p.count_include_pad = include_pad_;
    check_launch(v::pool3d_f32(static_cast<const float*>(x.data), static_cast<float*>(l.outputs[0].data), p, l.stream),
                 name_, "pool3d");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool max_, include_pad_;
};

}  // namespace

bool pool_is_3d(const ir::Node& n, const ir::Graph& g) {
  const ir::TensorType* t = g.type_of(n.inputs.at(0));
  return t && t->has_shape && t->shape.size() == 5;
}

std::string pool3d_supports(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  if (t != DType::kFloat32) return std::string("dtype ") + dtype_name(t) + " (the CUDA 3-D pooling takes float32)";
  if (!n.has_attr("kernel_shape")) return "kernel_shape is required";
  if (n.attr_ints("kernel_shape").size() != 3) return "kernel_shape must have 3 values for a 5-D input";
  if (n.op_type == "MaxPool" && n.outputs.size() > 1 && !n.outputs[1].empty()) return "MaxPool's Indices output";
  return "";
}

std::unique_ptr<CudaLayer> make_pool3d(const LayerCreateArgs& a) { return std::make_unique<Pool3dLayer>(a.node); }

}  // namespace kilnrt::backends::cuda
