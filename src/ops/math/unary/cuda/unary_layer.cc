// CUDA layers of the float unary activations and math (Relu ... Celu, Gelu of ai.onnx and com.kilnrt) and Clip: float
// storage through kernels::unary (float64 through unary_f64 for a subset), integer Clip as Max / Min through the
// binary kernel. Kernels: unary.cu, math/binary/cuda/binary.cu.
#include <limits>

#include "ops/cuda/cuda_layer.h"
#include "ops/math/binary/cuda/binary_kernels.h"
#include "ops/math/binary/cuda/binary_layer.h"
#include "ops/math/unary/cuda/unary_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string need_float(const ir::Node& n, const ir::Graph& g, size_t input = 0) {
  if (n.inputs.size() <= input) return "missing input";
  const DType t = value_dtype(g, n.inputs[input]);
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

struct UnarySpec {
  k::UnaryOp op;
  float a = 0.f, b = 0.f;
};

UnarySpec unary_spec(const ir::Node& n) {
  const std::string& op = n.op_type;
  if (op == "Relu") return {k::UnaryOp::kRelu};
  if (op == "Sigmoid") return {k::UnaryOp::kSigmoid};
  if (op == "Tanh") return {k::UnaryOp::kTanh};
  if (op == "HardSigmoid") return {k::UnaryOp::kHardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  if (op == "HardSwish") return {k::UnaryOp::kHardSwish};
  if (op == "Erf") return {k::UnaryOp::kErf};
  if (op == "Exp") return {k::UnaryOp::kExp};
  if (op == "Log") return {k::UnaryOp::kLog};
  if (op == "Sqrt") return {k::UnaryOp::kSqrt};
  if (op == "Neg") return {k::UnaryOp::kNeg};
  if (op == "Abs") return {k::UnaryOp::kAbs};
  if (op == "Reciprocal") return {k::UnaryOp::kReciprocal};
  if (op == "LeakyRelu") return {k::UnaryOp::kLeakyRelu, n.attr_float("alpha", 0.01f)};
  if (op == "Elu") return {k::UnaryOp::kElu, n.attr_float("alpha", 1.0f)};
  if (op == "Softplus") return {k::UnaryOp::kSoftplus};
  if (op == "Floor") return {k::UnaryOp::kFloor};
  if (op == "Ceil") return {k::UnaryOp::kCeil};
  if (op == "Sin") return {k::UnaryOp::kSin};
  if (op == "Cos") return {k::UnaryOp::kCos};
  if (op == "Round") return {k::UnaryOp::kRound};
  if (op == "Sign") return {k::UnaryOp::kSign};
  if (op == "Softsign") return {k::UnaryOp::kSoftsign};
  if (op == "Mish") return {k::UnaryOp::kMish};
  if (op == "Selu")
    return {k::UnaryOp::kSelu, n.attr_float("alpha", 1.67326319217681884765625f),
            n.attr_float("gamma", 1.05070102214813232421875f)};
  if (op == "ThresholdedRelu") return {k::UnaryOp::kThresholdedRelu, n.attr_float("alpha", 1.0f)};
  if (op == "Celu") return {k::UnaryOp::kCelu, n.attr_float("alpha", 1.0f)};
  if (op == "Gelu")
    return {n.attr_string("approximate", std::string("none")) == "tanh" ? k::UnaryOp::kGeluTanh : k::UnaryOp::kGeluErf};
  return {k::UnaryOp::kIdentity};
}

class UnaryLayer final : public CudaLayer {
 public:
  UnaryLayer(const ir::Node& n) : name_(n.describe()), spec_(unary_spec(n)), clip_(n.op_type == "Clip") {
    if (clip_ && n.has_attr("min")) spec_.a = n.attr_float("min");
    if (clip_ && n.has_attr("max")) spec_.b = n.attr_float("max");
    if (clip_) {
      spec_.op = k::UnaryOp::kClip;
      if (!n.has_attr("min")) spec_.a = -std::numeric_limits<float>::infinity();
      if (!n.has_attr("max")) spec_.b = std::numeric_limits<float>::infinity();
    }
  }
  std::string tactic() const override { return "kernel:unary"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return clip_ ? std::vector<int>{1, 2} : std::vector<int>{}; }
  void enqueue(LayerLaunch& l) override {
    float a = spec_.a, b = spec_.b;
    if (clip_) {
      if (l.inputs.size() > 1 && l.inputs[1].present) a = l.inputs[1].host->data<float>()[0];
      if (l.inputs.size() > 2 && l.inputs[2].present) b = l.inputs[2].host->data<float>()[0];
    }
    if (l.inputs[0].dtype == DType::kFloat64) {
      check_launch(k::unary_f64(spec_.op, static_cast<const double*>(l.inputs[0].data),
                                static_cast<double*>(l.outputs[0].data), l.outputs[0].numel(), l.stream),
                   name_, "unary_f64");
      return;
    }
    check_launch(k::unary(spec_.op, float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data,
                          l.outputs[0].numel(), a, b, l.stream),
                 name_, "unary");
  }

 private:
  std::string name_;
  UnarySpec spec_;
  bool clip_;
};

// Clip on integer tensors: y = Min(Max(x, min), max) through the binary kernel; min / max are optional scalar
// inputs (the integer Clip has no attributes).
class ClipIntLayer final : public CudaLayer {
 public:
  explicit ClipIntLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:binary"; }
  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const int code = binary_code(l.inputs[0].dtype);
    const void* a = l.inputs[0].data;
    for (size_t i = 1; i < 3 && i < l.inputs.size(); ++i) {
      if (!l.inputs[i].present) continue;
      const k::Broadcast3 bc = make_broadcast(y.shape, {y.shape, y.shape, l.inputs[i].shape});
      check_launch(k::binary(i == 1 ? k::BinaryOp::kMax : k::BinaryOp::kMin, code, a, l.inputs[i].data, y.data,
                             y.numel(), bc, l.stream),
                   name_, "clip");
      a = y.data;
    }
    if (a != y.data) {  // neither bound: copy
      k::Strided s;
      s.rank = 1;
      s.dims[0] = y.numel();
      s.out_strides[0] = s.in_strides[0] = 1;
      check_launch(k::strided_copy(y.data, a, s, dtype_size(y.dtype), l.stream), name_, "copy");
    }
  }

 private:
  std::string name_;
};

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"Relu",
     "Sigmoid",
     "Tanh",
     "HardSigmoid",
     "HardSwish",
     "Erf",
     "Exp",
     "Log",
     "Sqrt",
     "Neg",
     "Abs",
     "Reciprocal",
     "LeakyRelu",
     "Elu",
     "Softplus",
     "Floor",
     "Ceil",
     "Sin",
     "Cos",
     "Round",
     "Sign",
     "Softsign",
     "Mish",
     "Selu",
     "ThresholdedRelu",
     "Celu",
     "Gelu",
     "com.kilnrt:Gelu"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (!n.inputs.empty() && value_dtype(g, n.inputs[0]) == DType::kFloat64 && k::unary_f64_op(unary_spec(n).op))
        return "";  // kernels::unary_f64
      return need_float(n, g);
    },
    factory<UnaryLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"Clip"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.empty()) return "missing input";
      const DType t = value_dtype(g, n.inputs[0]);
      if (t == DType::kFloat32 || is_float(t) || binary_code(t) < 0) return need_float(n, g);
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != t) return "mixed input dtypes";
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      if (is_float(value_dtype(a.graph, a.node.inputs.at(0)))) return std::make_unique<UnaryLayer>(a.node);
      return std::make_unique<ClipIntLayer>(a.node);
    });

}  // namespace kilnrt::backends::cuda
