// The supports() check of the float32-only cuBLASLt / cuDNN layers: MatMul and Gemm (ops/nn/gemm/cuda), Conv
// (ops/nn/conv/cuda) and FusedConv (ops/nn/fused_conv/cuda).
#pragma once
#include <string>

#include "ir/graph.h"

namespace kilnrt::backends::cuda {

// "" when every one of the node's first 4 inputs is float32 (or omitted), else the reason the CUDA layer refuses it
// ("dtype X (the CUDA layer takes float32)").
std::string float32_layer_inputs(const ir::Node& n, const ir::Graph& g);

}  // namespace kilnrt::backends::cuda
