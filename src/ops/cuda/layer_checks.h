// Checks shared by the CUDA layers of LpPool, CenterCropPad, Col2Im, AffineGrid, DeformConv and TensorScatter: the
// host value of a shape input, the planned output shape, and the supports() dtype checks (float32 inputs, elements
// of 1 / 2 / 4 / 8 bytes).
#pragma once
#include <initializer_list>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

inline const Tensor& host_value(const LayerLaunch& l, size_t i, const std::string& node, const char* what) {
  KILNRT_CHECK(i < l.inputs.size() && l.inputs[i].present && l.inputs[i].host != nullptr, kInternal, node,
               what << "'s host value is missing");
  return *l.inputs[i].host;
}

inline void expect_output(const LayerOutput& y, const Shape& want, const std::string& node) {
  KILNRT_CHECK(y.shape == want, kInternal, node,
               "output shape " << shape_to_string(y.shape) << ", expected " << shape_to_string(want));
}

inline std::string float32_inputs(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> which) {
  for (size_t i : which) {
    if (i >= n.inputs.size() || n.inputs[i].empty()) continue;
    const DType d = value_dtype(g, n.inputs[i]);
    if (d != DType::kUndefined && d != DType::kFloat32)
      return "the CUDA " + n.op_type + " layer takes float32 (input " + std::to_string(i) + " is " + dtype_name(d) +
             ")";
  }
  return "";
}

inline std::string any_element_size(const ir::Node& n, const ir::Graph& g) {
  const DType d = value_dtype(g, n.inputs.at(0));
  if (d == DType::kUndefined) return "";
  const size_t s = dtype_size(d);
  return s == 1 || s == 2 || s == 4 || s == 8 ? "" : "elements of " + std::string(dtype_name(d)) + " are not moved";
}

}  // namespace kilnrt::backends::cuda
