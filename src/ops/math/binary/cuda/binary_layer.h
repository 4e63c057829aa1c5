// The CUDA layer of the broadcasting binary ops (binary_layer.cc): arithmetic here (Add, Sub, Mul, Div, Pow, Mod,
// PRelu, variadic Max / Min / Sum chained), and the comparisons / logic of math/logic (comparison_layer.cc), which
// register the same layer. binary_code is also integer Clip's (math/unary).
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// kernels::binary's dtype codes (kernel_dtype_code's six plus the narrow / unsigned integers and float64), -1 other.
int binary_code(DType t);
// supports() of the binary layer: "" when every input has a binary dtype code and they agree (Pow's exponent may
// differ).
std::string binary_supports(const ir::Node& n, const ir::Graph& g);
// The binary layer of a node (its op type picks the kernels::BinaryOp).
std::unique_ptr<CudaLayer> make_binary_layer(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
