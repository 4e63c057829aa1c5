// CUDA layer of Where: y = cond ? x : z with broadcasting, any 1- / 2- / 4- / 8-byte value dtype. Kernel: where.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/math/logic/cuda/where_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class WhereLayer final : public CudaLayer {
 public:
  explicit WhereLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:where"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const k::Broadcast3 bc = make_broadcast(y.shape, {l.inputs[0].shape, l.inputs[1].shape, l.inputs[2].shape});
    check_launch(k::where(static_cast<const uint8_t*>(l.inputs[0].data), l.inputs[1].data, l.inputs[2].data, y.data,
                          y.numel(), bc, dtype_size(y.dtype), l.stream),
                 name_, "where");
  }

 private:
  std::string name_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"Where"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const size_t sz = dtype_size(value_dtype(g, n.inputs.at(1)));
      return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<WhereLayer>(a.node); });

}  // namespace kilnrt::backends::cuda
