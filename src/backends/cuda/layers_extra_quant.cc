// CUDA layers for CPU parity (part 4): QuantizeLinear / DequantizeLinear (per tensor or per axis, int8 /
// uint8, DequantizeLinear also int16 / uint16 / int32; no blocked quantization), ReverseSequence, Det. Kernels: kernels/extra_sample.cu.
#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/extra_kernels.h"
#include "backends/cuda/layers_bits.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels::extra;

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
      check_launch(x::quantize_f32(static_cast<const float*>(xin.data), static_cast<const float*>(l.inputs[1].data), zp,
                                   l.outputs[0].data, l.outputs[0].dtype == DType::kInt8, n, axis_len, inner, l.stream),
                   name_, "quantize");
    } else {
      const int code = xin.dtype == DType::kUInt8   ? 0
                       : xin.dtype == DType::kInt8  ? 1
                       : xin.dtype == DType::kInt16 ? 3
                       : xin.dtype == DType::kUInt16 ? 4
                                                     : 2;
      check_launch(x::dequantize_f32(xin.data, code, static_cast<const float*>(l.inputs[1].data), zp,
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

class ReverseSequenceLayer final : public CudaLayer {
 public:
  explicit ReverseSequenceLayer(const ir::Node& n)
      : name_(n.describe()), batch_axis_(n.attr_int("batch_axis", 1)), time_axis_(n.attr_int("time_axis", 0)) {}
  std::string tactic() const override { return "kernel:reverse-sequence"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    KILNRT_CHECK(s.size() >= 2 && ((batch_axis_ == 1 && time_axis_ == 0) || (batch_axis_ == 0 && time_axis_ == 1)),
                 kUnsupported, name_, "ReverseSequence needs rank >= 2 and axes {0, 1}");
    const int64_t b = s[batch_axis_];
    KILNRT_CHECK(l.inputs[1].numel() == b, kInvalidArgument, name_,
                 "sequence_lens has " << l.inputs[1].numel() << " values for a batch of " << b);
    int64_t inner = 1;
    for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
    check_launch(x::reverse_sequence(l.inputs[0].data, static_cast<const int64_t*>(l.inputs[1].data),
                                     l.outputs[0].data, s[0], s[1], inner, time_axis_ == 0,
                                     dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "reverse_sequence");
  }

 private:
  std::string name_;
  int64_t batch_axis_, time_axis_;
};

class DetLayer final : public CudaLayer {
 public:
  explicit DetLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:det-lu"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    KILNRT_CHECK(s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2], kInvalidArgument, name_,
                 "input must be [..., M, M]");
    const int64_t m = s.back();
    const int64_t batch = l.outputs[0].numel();
    const size_t bytes = static_cast<size_t>(batch * m * m) * sizeof(double);
    KILNRT_CHECK(bytes <= l.workspace_bytes, kUnsupported, name_, "Det scratch exceeds the CUDA workspace");
    check_launch(x::det_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data),
                            static_cast<double*>(l.workspace), batch, m, l.stream),
                 name_, "det");
  }

 private:
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

LayerFactory quant_factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
    if (quant_needs_general(a.node, a.graph)) return make_quant_general(a);  // layers_bits_quant.cc
    return std::make_unique<QuantLayer>(a.node);
  };
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    r.add({"QuantizeLinear",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (quant_needs_general(n, g)) return quant_general_supports(n, g);  // layers_bits_quant.cc
             if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32 || value_dtype(g, n.inputs.at(1)) != DType::kFloat32)
               return "the CUDA layer takes float32 x and scale";
             if (n.inputs.size() > 2 && !n.inputs[2].empty() &&
                 !dtype_is_one_of(value_dtype(g, n.inputs[2]), {DType::kInt8, DType::kUInt8}))
               return "zero point must be int8 / uint8";
             return "";
           },
           quant_factory()});
    r.add({"DequantizeLinear",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (quant_needs_general(n, g)) return quant_general_supports(n, g);  // layers_bits_quant.cc
             const DType t = value_dtype(g, n.inputs.at(0));
             if (!dtype_is_one_of(t, {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32}))
               return "x must be int8 / uint8 / int16 / uint16 / int32";
             if (value_dtype(g, n.inputs.at(1)) != DType::kFloat32) return "the CUDA layer takes a float32 scale";
             if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != t)
               return "zero point dtype differs from x";
             return "";
           },
           quant_factory()});
    r.add({"ReverseSequence",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (value_dtype(g, n.inputs.at(1)) != DType::kInt64) return "sequence_lens must be int64";
             const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
             return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
           },
           factory<ReverseSequenceLayer>()});
    r.add({"Det",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA Det takes float32";
           },
           factory<DetLayer>()});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
