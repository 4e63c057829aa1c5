// CUDA layer of QuantizeLinear / DequantizeLinear per tensor or per axis (float32 <-> int8 / uint8, DequantizeLinear
// also int16 / uint16 / int32). Blocked parameters, 16-bit outputs and output_dtype go to the general layer
// (quantize_general_layer.cc). Kernels: quantize_linear.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/quantize/cuda/quantize_general_layer.h"
#include "ops/nn/quantize/cuda/quantize_linear_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// Per-axis length / inner stride of a scale with `scale_numel` values over `shape` at `axis`.
void quant_layout(const Shape& shape, int64_t scale_numel, int64_t axis_attr, const ir::Node& node,
                  const std::string& name, int64_t* axis_len, int64_t* inner) {
  *axis_len = 1;
  *inner = 1;
  if (scale_numel <= 1) return;
  const int64_t a = ops::normalize_axis(axis_attr, static_cast<int64_t>(shape.size()), node);
  KILNRT_CHECK(shape[a] == scale_numel, kInvalidArgument, name,
               "per-axis scale has " << scale_numel << " values for axis " << a << " of size " << shape[a]);
  for (size_t d = a + 1; d < shape.size(); ++d) *inner *= shape[d];
  *axis_len = scale_numel;
}

class QuantLayer final : public CudaLayer {
 public:
  explicit QuantLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), quantize_(n.op_type == "QuantizeLinear"), axis_(n.attr_int("axis", 1)) {}
  std::string tactic() const override { return quantize_ ? "kernel:quantize" : "kernel:dequantize"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& xin = l.inputs[0];
    int64_t axis_len, inner;
    quant_layout(xin.shape, l.inputs[1].numel(), axis_, node_, name_, &axis_len, &inner);
    const bool has_zp = l.inputs.size() > 2 && l.inputs[2].present;
    const void* zp = has_zp ? l.inputs[2].data : nullptr;
    const int64_t n = l.outputs[0].numel();
    if (quantize_) {
      check_launch(k::quantize_f32(static_cast<const float*>(xin.data), static_cast<const float*>(l.inputs[1].data), zp,
                                   l.outputs[0].data, l.outputs[0].dtype == DType::kInt8, n, axis_len, inner, l.stream),
                   name_, "quantize");
    } else {
      const int code = xin.dtype == DType::kUInt8    ? 0
                       : xin.dtype == DType::kInt8   ? 1
                       : xin.dtype == DType::kInt16  ? 3
                       : xin.dtype == DType::kUInt16 ? 4
                                                     : 2;
      check_launch(k::dequantize_f32(xin.data, code, static_cast<const float*>(l.inputs[1].data), zp,
                                     static_cast<float*>(l.outputs[0].data), n, axis_len, inner, l.stream),
                   name_, "dequantize");
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool quantize_;
  int64_t axis_;
};

LayerFactory quant_factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
    if (quant_needs_general(a.node, a.graph)) return make_quant_general(a);  // quantize_general_layer.cc
    return std::make_unique<QuantLayer>(a.node);
  };
}

KILNRT_REGISTER_CUDA_LAYER(
    {"QuantizeLinear"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (quant_needs_general(n, g)) return quant_general_supports(n, g);  // quantize_general_layer.cc
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32 || value_dtype(g, n.inputs.at(1)) != DType::kFloat32)
        return "the CUDA layer takes float32 x and scale";
      if (n.inputs.size() > 2 && !n.inputs[2].empty() &&
          !dtype_is_one_of(value_dtype(g, n.inputs[2]), {DType::kInt8, DType::kUInt8}))
        return "zero point must be int8 / uint8";
      return "";
    },
    quant_factory());
KILNRT_REGISTER_CUDA_LAYER(
    {"DequantizeLinear"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (quant_needs_general(n, g)) return quant_general_supports(n, g);  // quantize_general_layer.cc
      const DType t = value_dtype(g, n.inputs.at(0));
      if (!dtype_is_one_of(t, {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32}))
        return "x must be int8 / uint8 / int16 / uint16 / int32";
      if (value_dtype(g, n.inputs.at(1)) != DType::kFloat32) return "the CUDA layer takes a float32 scale";
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != t)
        return "zero point dtype differs from x";
      return "";
    },
    quant_factory());

}  // namespace
}  // namespace kilnrt::backends::cuda
