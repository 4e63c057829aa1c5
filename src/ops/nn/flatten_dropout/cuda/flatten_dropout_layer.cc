// CUDA layers of nn/flatten_dropout: Flatten and Dropout are views (alias_layer.h: no kernel, the output aliases the
// input); a Dropout whose mask output is used goes to the mask layer (dropout_mask_layer.h).
#include "ops/cuda/alias_layer.h"
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/flatten_dropout/cuda/dropout_mask_layer.h"

namespace kilnrt::backends::cuda {
namespace {

KILNRT_REGISTER_CUDA_LAYER(
    {"Flatten", "Dropout"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (dropout_has_mask(n)) return dropout_mask_supports(n, g);  // dropout_mask_layer.cc
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      if (dropout_has_mask(a.node)) return make_dropout_mask(a);
      return std::make_unique<AliasLayer>(a.node, a.opset);
    });

}  // namespace
}  // namespace kilnrt::backends::cuda
