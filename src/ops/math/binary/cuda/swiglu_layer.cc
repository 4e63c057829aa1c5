// CUDA layer of SwiGLU (opset 28): y = a * sigmoid(alpha * a) * b on A and B of one shape, one elementwise kernel
// (swiglu.cu) on float32 or float64 (double math); float16 / bfloat16 tensors run as float32 islands.
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_io.h"
#include "ops/math/binary/cuda/swiglu_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace ak = kilnrt::cuda::kernels;

class SwiGluLayer final : public CudaLayer {
 public:
  explicit SwiGluLayer(const ir::Node& n) : name_(n.describe()), op_(n.op_type), alpha_(n.attr_float("alpha", 1.f)) {}
  std::string tactic() const override { return "kernel:" + op_; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor* a = input_at(l, 0);
    LayerOutput* y = output_at(l, 0);
    KILNRT_CHECK(a && y, kInvalidModel, name_, "input and output are required");
    KILNRT_CHECK(dtype_is_one_of(a->dtype, {DType::kFloat32, DType::kFloat64}), kUnsupported, name_,
                 "the CUDA " << op_ << " takes float32 / float64, got " << dtype_name(a->dtype));
    const bool f64 = a->dtype == DType::kFloat64;
    const LayerTensor* b = input_at(l, 1);
    KILNRT_CHECK(b && b->dtype == a->dtype && b->shape == a->shape, kInvalidModel, name_,
                 "SwiGLU needs A and B of the same shape and dtype, got " << shape_to_string(a->shape) << " and "
                                                                          << (b ? shape_to_string(b->shape) : "none"));
    check_launch(ak::swiglu(a->data, b->data, y->data, a->numel(), alpha_, f64, l.stream), name_, "swiglu");
  }

 private:
  std::string name_, op_;
  double alpha_;
};

std::string supports_swiglu(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 2) return n.op_type + " needs 2 inputs";
  return check_dtypes(n, g, {0, 1}, {DType::kFloat32, DType::kFloat64}, "float32 / float64");
}

KILNRT_REGISTER_CUDA_LAYER({"SwiGLU"}, supports_swiglu, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<SwiGluLayer>(a.node);
});

}  // namespace
}  // namespace kilnrt::backends::cuda
