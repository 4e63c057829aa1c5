// The CUDA layer of Identity: a view (alias_layer.h: no kernel, the output aliases the input).
#include "ops/cuda/alias_layer.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {
namespace {

KILNRT_REGISTER_CUDA_LAYER({"Identity"}, nullptr, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<AliasLayer>(a.node, a.opset);
});

}  // namespace
}  // namespace kilnrt::backends::cuda
