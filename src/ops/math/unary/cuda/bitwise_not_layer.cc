// CUDA layer of BitwiseNot (integers). Kernel: bitwise_not.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/int_dtype_codes.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/unary/cuda/bitwise_not_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class BitNotLayer final : public CudaLayer {
 public:
  explicit BitNotLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:bits-not"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(int_dtype_code(x.dtype) >= 0, kUnsupported, name_,
                 "dtype " << dtype_name(x.dtype) << " is not an integer");
    check_launch(k::bit_not(x.data, l.outputs.at(0).data, x.numel(), dtype_size(x.dtype), l.stream), name_, "bit_not");
  }

 private:
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"BitwiseNot"}, [](const ir::Node& n, const ir::Graph& g) { return integer_inputs(n, g, 1); },
    factory<BitNotLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
