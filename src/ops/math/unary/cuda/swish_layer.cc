// CUDA layer of Swish (opset 24): y = x * sigmoid(alpha * x), one elementwise kernel (swish.cu) on float32 (float
// math) or float64 (double math); float16 / bfloat16 tensors run as float32 islands.
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_io.h"
#include "ops/math/unary/cuda/swish_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels;

class SwishLayer final : public CudaLayer {
 public:
  explicit SwishLayer(const ir::Node& n) : name_(n.describe()), op_(n.op_type), alpha_(n.attr_float("alpha", 1.f)) {}
  std::string tactic() const override { return "kernel:" + op_; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* a = input_at(l, 0);
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(a && y, kInvalidModel, name_, "input and output are required");
    KILNRT_CHECK(dtype_is_one_of(a->dtype, {DType::kFloat32, DType::kFloat64}), kUnsupported, name_,
                 "the CUDA " << op_ << " takes float32 / float64, got " << dtype_name(a->dtype));
    const bool f64 = a->dtype == DType::kFloat64;
    check_launch(ak::swish(a->data, y->data, a->numel(), alpha_, f64, l.stream), name_, "swish");
  }

 private:
  std::string name_, op_;
  double alpha_;
};

std::string supports_swish(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 1) return n.op_type + " needs 1 inputs";
  return check_dtypes(n, g, {0}, {DType::kFloat32, DType::kFloat64}, "float32 / float64");
}

KILNRT_REGISTER_CUDA_LAYER({"Swish"}, supports_swish, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<SwishLayer>(a.node);
});

}  // namespace
}  // namespace kilnrt::backends::cuda
