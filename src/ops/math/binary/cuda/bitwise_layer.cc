// CUDA layer of BitwiseAnd / Or / Xor (broadcasting) and BitShift on signed (opset 28) and unsigned integers.
// Kernel: bitwise.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/int_dtype_codes.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/binary/cuda/bitwise_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

bool is_unsigned(DType t) {
  return dtype_is_one_of(t, {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64});
}

// ---- BitwiseAnd / Or / Xor, BitShift ----------------------------------------------------------------------------
class BitBinaryLayer final : public CudaLayer {
 public:
  explicit BitBinaryLayer(const ir::Node& n) : name_(n.describe()) {
    const std::string& op = n.op_type;
    op_ = op == "BitwiseAnd" ? 0 : op == "BitwiseOr" ? 1 : op == "BitwiseXor" ? 2 : 3;
    if (op == "BitShift" && n.attr_string("direction") == "RIGHT") op_ = 4;
  }
  std::string tactic() const override { return "kernel:bits-binary"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& a = l.inputs.at(0);
    const LayerTensor& b = l.inputs.at(1);
    LayerOutput& y = l.outputs.at(0);
    const int code = int_dtype_code(a.dtype);
    KILNRT_CHECK(code >= 0 && a.dtype == b.dtype && y.dtype == a.dtype, kUnsupported, name_,
                 "inputs must be of one integer dtype, got " << dtype_name(a.dtype) << " and " << dtype_name(b.dtype));
    if (y.numel() == 0) return;
    const kilnrt::cuda::kernels::Broadcast3 bc = make_broadcast(y.shape, {y.shape, a.shape, b.shape});
    check_launch(k::bit_binary(op_, code, a.data, b.data, y.data, y.numel(), bc, l.stream), name_, "bit_binary");
  }

 private:
  std::string name_;
  int op_ = 0;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"BitwiseAnd", "BitwiseOr", "BitwiseXor"},
    [](const ir::Node& n, const ir::Graph& g) { return integer_inputs(n, g, 2); }, factory<BitBinaryLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"BitShift"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = integer_inputs(n, g, 2); !e.empty()) return e;
      const std::string dir = n.attr_string("direction");
      if (dir != "LEFT" && dir != "RIGHT") return "direction must be LEFT or RIGHT";
      if (g.opset(n.domain) < 28 && !is_unsigned(value_dtype(g, n.inputs[0]))) return "signed integers before opset 28";
      return "";
    },
    factory<BitBinaryLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
