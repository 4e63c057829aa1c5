// CUDA layer of Det (float32; LU in double in the workspace). Kernel: det.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/linalg/cuda/det_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

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
    check_launch(k::det_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data),
                            static_cast<double*>(l.workspace), batch, m, l.stream),
                 name_, "det");
  }

 private:
  std::string name_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Det"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA Det takes float32";
    },
    factory<DetLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
