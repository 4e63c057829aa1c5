// Helpers of the float32 CUDA layers of LinearAttention, CausalConvWithState, RMSNormalization, LpNormalization and
// CumProd: whether an optional input is there, float32 pointers of optional inputs / outputs (nullptr when absent),
// and the float32 checks of supports() and enqueue. In their own namespace: other layers have helpers of these names.
#pragma once
#include <initializer_list>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda::float32_kernel_io {

inline bool has(const ir::Node& n, size_t i) { return n.inputs.size() > i && !n.inputs[i].empty(); }
inline bool has(const LayerLaunch& l, size_t i) { return l.inputs.size() > i && l.inputs[i].present; }
inline const float* f32_in(const LayerLaunch& l, size_t i) {
  return has(l, i) ? static_cast<const float*>(l.inputs[i].data) : nullptr;
}
inline float* f32_out(LayerLaunch& l, size_t i) {
  return l.outputs.size() > i && l.outputs[i].present ? static_cast<float*>(l.outputs[i].data) : nullptr;
}

// "" when every present input in `inputs` is float32 (or of unknown dtype), else the reason.
inline std::string float32_inputs(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (!has(n, i)) continue;
    const DType t = value_dtype(g, n.inputs[i]);
    if (t != DType::kUndefined && t != DType::kFloat32)
      return "input " + std::to_string(i) + " has dtype " + dtype_name(t) + " (the CUDA kernel takes float32)";
  }
  for (const std::string& o : n.outputs) {
    if (o.empty()) continue;
    const DType t = value_dtype(g, o);
    if (t != DType::kUndefined && t != DType::kFloat32)
      return "output '" + o + "' has dtype " + dtype_name(t) + " (the CUDA kernel writes float32)";
  }
  return "";
}

inline void check_float32(const LayerLaunch& l, const std::string& name) {
  for (size_t i = 0; i < l.inputs.size(); ++i)
    KILNRT_CHECK(!l.inputs[i].present || l.inputs[i].dtype == DType::kFloat32, kUnsupported, name,
                 "input " << i << " is " << dtype_name(l.inputs[i].dtype) << ", the CUDA kernel takes float32");
}

}  // namespace kilnrt::backends::cuda::float32_kernel_io
