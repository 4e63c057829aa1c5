// The supports() check of the float32-only layers (float32_layer_inputs.h).
#include "ops/cuda/float32_layer_inputs.h"

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

std::string float32_layer_inputs(const ir::Node& n, const ir::Graph& g) {
  for (size_t i = 0; i < n.inputs.size() && i < 4; ++i)
    if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
      return std::string("dtype ") + dtype_name(value_dtype(g, n.inputs[i])) + " (the CUDA layer takes float32)";
  return "";
}

}  // namespace kilnrt::backends::cuda
