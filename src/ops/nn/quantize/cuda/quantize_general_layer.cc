// CUDA layer for QuantizeLinear / DequantizeLinear beyond the main layer (quantize_linear_layer.cc):
// blocked parameters (block_size, opset 21), int16 / uint16 outputs, output_dtype. Kernels: quantize_general.cu,
// with the arithmetic of the CPU reference (src/ops/nn/quantize/quantize.cc).
#include "ops/nn/quantize/cuda/quantize_general_layer.h"

#include "ops/cuda/int_dtype_codes.h"
#include "ops/nn/quantize/cuda/quantize_linear_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace bk = kilnrt::cuda::kernels;

// The layout of a scale / zero point of `p_shape` over X of `x_shape`, as element_params of the CPU reference reads
// it: per tensor (<= 1 value), blocked (block_size > 0: X's rank, ceil(len / block) along the axis) or per axis.
bk::QuantParams param_layout(const Shape& x_shape, const Shape& p_shape, int64_t axis_attr, int64_t block,
                             bool blocked_scale, const ir::Node& node, const std::string& name, const char* what) {
  bk::QuantParams p;
  const int rank = static_cast<int>(x_shape.size());
  KILNRT_CHECK(rank <= kilnrt::cuda::kernels::kMaxDims, kUnsupported, name,
               "rank " << rank << " exceeds " << kilnrt::cuda::kernels::kMaxDims);
  p.rank = rank;
  for (int d = 0; d < rank; ++d) p.dims[d] = x_shape[d];
  const int64_t numel = shape_numel(p_shape);
  if (blocked_scale) {  // the CPU reference reads the zero point blocked too when the scale is
    const int a = static_cast<int>(ops::normalize_axis(axis_attr, rank, node));
    bool ok = static_cast<int>(p_shape.size()) == rank;
    for (int d = 0; ok && d < rank; ++d)
      ok = d == a ? p_shape[d] == (x_shape[d] + block - 1) / block : p_shape[d] == x_shape[d];
    KILNRT_CHECK(ok, kInvalidArgument, name,
                 "blocked " << what << " of shape " << shape_to_string(p_shape) << " does not match input "
                            << shape_to_string(x_shape) << " with block_size " << block << " on axis " << a);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      p.param_strides[d] = stride;
      stride *= p_shape[d];
    }
    p.axis = a;
    p.block = block;
    return p;
  }
  if (numel <= 1) return p;  // per tensor: every stride 0
  const int a = static_cast<int>(ops::normalize_axis(axis_attr, rank, node));
  KILNRT_CHECK(x_shape[a] == numel, kInvalidArgument, name,
               "per-axis " << what << " has " << numel << " values for axis " << a << " of size " << x_shape[a]);
  p.param_strides[a] = 1;
  return p;
}

class QuantGeneralLayer final : public CudaLayer {
 public:
  explicit QuantGeneralLayer(const ir::Node& n)
      : node_(n),
        name_(n.describe()),
        quantize_(n.op_type == "QuantizeLinear"),
        axis_(n.attr_int("axis", 1)),
        block_(n.attr_int("block_size", 0)) {}
  std::string tactic() const override { return quantize_ ? "kernel:quantize-general" : "kernel:dequantize-general"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const LayerTensor& scale = l.inputs.at(1);
    const bool has_zp = l.inputs.size() > 2 && l.inputs[2].present;
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(scale.dtype == DType::kFloat32, kUnsupported, name_, "the scale must be float32");
    const bool blocked = block_ > 0 && scale.numel() > 1;
    const bk::QuantParams ps = param_layout(x.shape, scale.shape, axis_, block_, blocked, node_, name_, "scale");
    bk::QuantParams pz;
    if (has_zp) pz = param_layout(x.shape, l.inputs[2].shape, axis_, block_, blocked, node_, name_, "zero point");
    const void* zp = has_zp ? l.inputs[2].data : nullptr;
    if (quantize_) {
      const int code = int_dtype_code(y.dtype, IntCodes::kQuantized);
      KILNRT_CHECK(
          x.dtype == DType::kFloat32 && code >= 0 && code != bk::kI32 && (!has_zp || l.inputs[2].dtype == y.dtype),
          kUnsupported, name_,
          "QuantizeLinear of " << dtype_name(x.dtype) << " to " << dtype_name(y.dtype)
                               << " (this CUDA layer takes float32 to int8 / uint8 / int16 / uint16)");
      check_launch(bk::quantize_general(static_cast<const float*>(x.data), static_cast<const float*>(scale.data), zp,
                                        y.data, code, y.numel(), ps, pz, l.stream),
                   name_, "quantize_general");
    } else {
      const int code = int_dtype_code(x.dtype, IntCodes::kQuantized);
      KILNRT_CHECK(code >= 0 && y.dtype == DType::kFloat32 && (!has_zp || l.inputs[2].dtype == x.dtype), kUnsupported,
                   name_, "DequantizeLinear of " << dtype_name(x.dtype) << " to " << dtype_name(y.dtype));
      check_launch(bk::dequantize_general(x.data, static_cast<const float*>(scale.data), zp,
                                          static_cast<float*>(y.data), code, y.numel(), ps, pz, l.stream),
                   name_, "dequantize_general");
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool quantize_;
  int64_t axis_, block_;
};

bool has_input(const ir::Node& n, size_t i) { return i < n.inputs.size() && !n.inputs[i].empty(); }

// The output dtype of QuantizeLinear as the CPU reference picks it.
DType quantize_output(const ir::Node& n, const ir::Graph& g) {
  if (has_input(n, 2)) return value_dtype(g, n.inputs[2]);
  if (n.attr_int("output_dtype", 0) != 0) return static_cast<DType>(n.attr_int("output_dtype", 0));
  return DType::kUInt8;
}

}  // namespace

bool quant_needs_general(const ir::Node& n, const ir::Graph& g) {
  if (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") return false;
  if (n.attr_int("block_size", 0) != 0) return true;
  if (n.op_type == "DequantizeLinear") return false;
  if (!has_input(n, 2)) return n.attr_int("output_dtype", 0) != 0;
  return dtype_is_one_of(value_dtype(g, n.inputs[2]), {DType::kInt16, DType::kUInt16});
}

std::string quant_general_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 2) return "needs x and a scale";
  if (n.attr_int("block_size", 0) < 0) return "block_size must be >= 0";
  if (value_dtype(g, n.inputs[1]) != DType::kFloat32) return "the CUDA layer takes a float32 scale";
  if (n.op_type == "QuantizeLinear") {
    if (value_dtype(g, n.inputs[0]) != DType::kFloat32) return "the CUDA layer takes float32 x";
    const DType out = quantize_output(n, g);
    if (!dtype_is_one_of(out, {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16}))
      return std::string("output dtype ") + dtype_name(out) + " (int8 / uint8 / int16 / uint16)";
    return "";
  }
  const DType t = value_dtype(g, n.inputs[0]);
  if (int_dtype_code(t, IntCodes::kQuantized) < 0) return "x must be int8 / uint8 / int16 / uint16 / int32";
  if (has_input(n, 2) && value_dtype(g, n.inputs[2]) != t) return "zero point dtype differs from x";
  return "";
}

std::unique_ptr<CudaLayer> make_quant_general(const LayerCreateArgs& a) {
  return std::make_unique<QuantGeneralLayer>(a.node);
}

}  // namespace kilnrt::backends::cuda
