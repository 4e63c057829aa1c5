// The CUDA layer of com.kilnrt:FusedConv (passes/fuse_conv_epilogue): the Conv layer (ops/nn/conv/cuda/conv_layer.h)
// followed by one epilogue kernel (bias + residual + activation in a single pass over the output).
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_layer_inputs.h"
#include "ops/nn/conv/cuda/conv_layer.h"
#include "ops/nn/fused_conv/fused_conv.h"

namespace kilnrt::backends::cuda {
namespace {

std::string fused_conv_supports(const ir::Node& n, const ir::Graph& g) {
  if (std::string why = conv_rank_supported(n, g); !why.empty()) return why;
  try {
    ops::nn::read_fused_epilogue(n);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return float32_layer_inputs(n, g);
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:FusedConv"}, fused_conv_supports, make_conv_layer);

}  // namespace kilnrt::backends::cuda
