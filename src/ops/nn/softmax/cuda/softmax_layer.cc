// CUDA layer of Softmax / LogSoftmax: over one axis (opset 13+) or the flattened trailing dims (before), float32 /
// 16-bit storage (softmax.cu) or float64 (softmax_f64.cu).
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/softmax/cuda/softmax_f64.h"
#include "ops/nn/softmax/cuda/softmax_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

class SoftmaxLayer final : public CudaLayer {
 public:
  SoftmaxLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:softmax"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int rank = static_cast<int>(xs.size());
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", opset_ >= 13 ? -1 : 1), rank, node_));
    int64_t outer = 1, n = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    if (opset_ >= 13) {
      n = xs[axis];
      for (int d = axis + 1; d < rank; ++d) inner *= xs[d];
    } else {
      for (int d = axis; d < rank; ++d) n *= xs[d];
    }
    if (l.inputs[0].dtype == DType::kFloat64) {  // softmax_f64.cu: storage and math in double
      check_launch(
          k::f64::softmax(static_cast<const double*>(l.inputs[0].data), static_cast<double*>(l.outputs[0].data), outer,
                          n, inner, node_.op_type == "LogSoftmax", l.stream),
          name_, "softmax_f64");
      return;
    }
    check_launch(k::softmax(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, outer, n, inner,
                            node_.op_type == "LogSoftmax", l.stream),
                 name_, "softmax");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"Softmax", "LogSoftmax"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {  // float64: softmax_f64.cu
      return value_dtype(g, n.inputs.at(0)) == DType::kFloat64 ? "" : float_input(n, g);
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      return std::make_unique<SoftmaxLayer>(a.node, a.opset);
    });

}  // namespace kilnrt::backends::cuda
