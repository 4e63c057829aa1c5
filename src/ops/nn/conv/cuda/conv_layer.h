// The CUDA convolution layer (conv_layer.cc): one class runs Conv and com.kilnrt:FusedConv (the same convolution
// followed by the fused epilogue). Conv registers it here; FusedConv in ops/nn/fused_conv/cuda/fused_conv_layer.cc.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// The layer of a Conv or FusedConv node (a.node.op_type tells which).
std::unique_ptr<CudaLayer> make_conv_layer(const LayerCreateArgs& a);

// "" when input 0 is not known to have a rank other than 3 or 4 (1-D and 2-D convolutions), else the reason.
std::string conv_rank_supported(const ir::Node& n, const ir::Graph& g);

}  // namespace kilnrt::backends::cuda
