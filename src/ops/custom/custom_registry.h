// Internal side of the custom-op API (include/kilnrt/custom_op.h): the registered CustomOps, looked up by the CUDA
// backend (src/ops/custom/cuda/custom_op_layer.cc), and the adapters between ir::Node and the public contexts.
#pragma once
#include <string>

#include "ir/graph.h"
#include "kilnrt/custom_op.h"

namespace kilnrt::ops::custom {

// The custom op registered for (domain, name) covering `opset`, or nullptr. The pointer stays valid for the life
// of the process.
const CustomOp* find_custom_op(const std::string& domain, const std::string& name, int64_t opset);

// "my.domain:ScaledTanh"
std::string qualified_name(const std::string& domain, const std::string& name);

}  // namespace kilnrt::ops::custom
