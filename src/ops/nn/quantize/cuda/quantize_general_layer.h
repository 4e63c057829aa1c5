// The CUDA layer of QuantizeLinear / DequantizeLinear with general parameters (quantize_general_layer.cc): the
// QuantizeLinear / DequantizeLinear registration (quantize_linear_layer.cc) hands these nodes over.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// True for the QuantizeLinear / DequantizeLinear nodes the main layer does not run: block_size > 0, QuantizeLinear
// with an int16 / uint16 zero point or with output_dtype and no zero point.
bool quant_needs_general(const ir::Node& n, const ir::Graph& g);
std::string quant_general_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_quant_general(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
