// The host-source layer (host_source_layer.h): runs the op's CPU reference on the inputs' host values and uploads
// the result on the stream.
#include "ops/cuda/host_source_layer.h"

#include "cuda/context_guard.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

class HostSourceLayer final : public CudaLayer {
 public:
  HostSourceLayer(const ir::Node& n, int64_t opset, int device)
      : node_(n), opset_(opset), device_(device), schema_(ops::OpRegistry::instance().get(n, opset)) {}
  std::string tactic() const override { return "host-source-upload"; }
  std::vector<int> host_inputs() const override {
    std::vector<int> all;
    for (size_t i = 0; i < node_.inputs.size(); ++i) all.push_back(static_cast<int>(i));
    return all;
  }
  void enqueue(LayerLaunch& l) override {
    ops::CpuContext ctx{node_, opset_, {}, {}};
    for (const LayerTensor& t : l.inputs) {
      KILNRT_CHECK(!t.present || t.host, kInternal, node_.describe(), "an input's host value is missing");
      ctx.inputs.push_back(t.present ? t.host : nullptr);
    }
    ctx.outputs.resize(node_.outputs.size());
    schema_.cpu(ctx);
    const Tensor& y = ctx.outputs.at(0);
    LayerOutput& out = l.outputs.at(0);
    KILNRT_CHECK(y.shape() == out.shape && y.dtype() == out.dtype, kInternal, node_.describe(),
                 "host result " << shape_to_string(y.shape()) << " does not match the planned output "
                                << shape_to_string(out.shape));
    if (y.nbytes() == 0) return;
    kilnrt::cuda::ContextGuard guard(device_);
    const auto& api = guard.api();
    // Pageable source: the driver stages it before returning, so `y` may go right after.
    KILNRT_CU_CHECK(api,
                    api.MemcpyHtoDAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(out.data)), y.raw(),
                                        y.nbytes(), l.stream),
                    node_.describe());
  }

 private:
  ir::Node node_;
  int64_t opset_;
  int device_;
  const ops::OpSchema& schema_;
};

}  // namespace

std::unique_ptr<CudaLayer> make_host_source_layer(const LayerCreateArgs& a) {
  return std::unique_ptr<CudaLayer>(new HostSourceLayer(a.node, a.opset, a.device));
}

}  // namespace kilnrt::backends::cuda
