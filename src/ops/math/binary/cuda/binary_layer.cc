// CUDA layer of the broadcasting binary ops: arithmetic (variadic Max / Min / Sum chained, Pow with another exponent
// dtype through kernels::pow_mixed), comparisons and logic (registered by math/logic's comparison_layer.cc).
// Kernels: binary.cu.
#include <map>

#include "ops/cuda/cuda_layer.h"
#include "ops/math/binary/cuda/binary_kernels.h"
#include "ops/math/binary/cuda/binary_layer.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

bool binary_op(const std::string& op, k::BinaryOp* out) {
  static const std::map<std::string, k::BinaryOp> ops = {{"Add", k::BinaryOp::kAdd},
                                                         {"Sum", k::BinaryOp::kAdd},
                                                         {"Sub", k::BinaryOp::kSub},
                                                         {"Mul", k::BinaryOp::kMul},
                                                         {"Div", k::BinaryOp::kDiv},
                                                         {"Pow", k::BinaryOp::kPow},
                                                         {"Max", k::BinaryOp::kMax},
                                                         {"Min", k::BinaryOp::kMin},
                                                         {"Mod", k::BinaryOp::kMod},
                                                         {"PRelu", k::BinaryOp::kPRelu},
                                                         {"Equal", k::BinaryOp::kEqual},
                                                         {"Less", k::BinaryOp::kLess},
                                                         {"Greater", k::BinaryOp::kGreater},
                                                         {"LessOrEqual", k::BinaryOp::kLessEq},
                                                         {"GreaterOrEqual", k::BinaryOp::kGreaterEq},
                                                         {"And", k::BinaryOp::kAnd},
                                                         {"Or", k::BinaryOp::kOr},
                                                         {"Xor", k::BinaryOp::kXor}};
  auto it = ops.find(op);
  if (it == ops.end()) return false;
  *out = it->second;
  return true;
}

class BinaryLayer final : public CudaLayer {
 public:
  explicit BinaryLayer(const ir::Node& n) : name_(n.describe()) {
    binary_op(n.op_type, &op_);
    if (n.op_type == "Mod" && n.attr_int("fmod", 0) != 0) op_ = k::BinaryOp::kFmod;
  }
  std::string tactic() const override { return "kernel:binary"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const int code = binary_code(l.inputs[0].dtype);
    if (l.inputs.size() == 2 && l.inputs[1].dtype != l.inputs[0].dtype) {  // Pow with another exponent dtype
      const k::Broadcast3 bc = make_broadcast(y.shape, {y.shape, l.inputs[0].shape, l.inputs[1].shape});
      check_launch(k::pow_mixed(code, l.inputs[0].data, binary_code(l.inputs[1].dtype), l.inputs[1].data, y.data,
                                y.numel(), bc, l.stream),
                   name_, "pow");
      return;
    }
    if (l.inputs.size() == 1) {  // variadic with one input: copy
      k::Strided s;
      s.rank = 1;
      s.dims[0] = y.numel();
      s.out_strides[0] = s.in_strides[0] = 1;
      check_launch(k::strided_copy(y.data, l.inputs[0].data, s, dtype_size(y.dtype), l.stream), name_, "copy");
      return;
    }
    const void* a = l.inputs[0].data;
    Shape a_shape = l.inputs[0].shape;
    for (size_t i = 1; i < l.inputs.size(); ++i) {
      const k::Broadcast3 bc = make_broadcast(y.shape, {y.shape, a_shape, l.inputs[i].shape});
      check_launch(k::binary(op_, code, a, l.inputs[i].data, y.data, y.numel(), bc, l.stream), name_, "binary");
      a = y.data;  // chained (variadic Max / Min / Sum): the output is the running result
      a_shape = y.shape;
    }
  }

 private:
  std::string name_;
  k::BinaryOp op_ = k::BinaryOp::kAdd;
};

}  // namespace

// kernels::binary's dtype codes (kernel_dtype_code's six plus the narrow / unsigned integers and float64), -1 other.
int binary_code(DType t) {
  switch (t) {
    case DType::kInt8: return 6;
    case DType::kUInt8: return 7;
    case DType::kInt16: return 8;
    case DType::kUInt16: return 9;
    case DType::kUInt32: return 10;
    case DType::kUInt64: return 11;
    case DType::kFloat64: return 12;
    default: return kernel_dtype_code(t);
  }
}

std::string binary_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 2 && !(n.op_type == "Max" || n.op_type == "Min" || n.op_type == "Sum"))
    return "needs two inputs";
  const DType t = value_dtype(g, n.inputs[0]);
  for (const std::string& in : n.inputs) {
    const DType ti = value_dtype(g, in);
    if (binary_code(ti) < 0) return std::string("dtype ") + dtype_name(ti);
    if (ti != t && n.op_type != "Pow") return "mixed input dtypes";  // Pow's exponent may have its own dtype
  }
  const bool half = t == DType::kFloat16 || t == DType::kBFloat16;
  if (n.op_type == "Pow" && half && value_dtype(g, n.inputs[1]) != t) return "16-bit Pow with another exponent dtype";
  return "";
}

std::unique_ptr<CudaLayer> make_binary_layer(const LayerCreateArgs& a) { return std::make_unique<BinaryLayer>(a.node); }

KILNRT_REGISTER_CUDA_LAYER({"Add", "Sum", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu"}, binary_supports,
                           make_binary_layer);

}  // namespace kilnrt::backends::cuda
