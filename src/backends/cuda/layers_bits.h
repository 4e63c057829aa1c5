// Entry points of layers_bits.cc that the main registrations of other files hand over to:
// ReduceMax / ReduceMin of bool tensors (layers_nn.cc's Reduce* registration asks reduce_is_bool first);
// QuantizeLinear / DequantizeLinear with blocked parameters, 16-bit outputs or output_dtype (layers_bits_quant.cc;
// layers_extra_quant.cc asks quant_needs_general first).
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// The integer dtype codes of kernels/bits.h (kI8 ... kU64) for the integer dtypes a kernel takes, -1 for others:
// every integer dtype (the bit ops), or only int8 / uint8 / int16 / uint16 / int32 (the quantize kernels).
enum class IntCodes { kAll, kQuantized };
int bits_int_code(DType t, IntCodes accepted = IntCodes::kAll);

// True for ReduceMax / ReduceMin of a bool input.
bool reduce_is_bool(const ir::Node& n, const ir::Graph& g);
std::string reduce_bool_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_reduce_bool(const LayerCreateArgs& a);

// True for the QuantizeLinear / DequantizeLinear nodes the main layer does not run: block_size > 0, QuantizeLinear
// with an int16 / uint16 zero point or with output_dtype and no zero point.
bool quant_needs_general(const ir::Node& n, const ir::Graph& g);
std::string quant_general_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_quant_general(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
