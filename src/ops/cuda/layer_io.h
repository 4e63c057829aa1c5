// Helpers of the CUDA layers of several op folders (Attention, FlexAttention, RotaryEmbedding, Swish, SwiGLU):
// optional inputs / outputs of a launch (nullptr when absent), the dtype check of a node's optional inputs, and the
// context workspace counted in rows of doubles.
#pragma once
#include <initializer_list>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

inline const LayerTensor* input_at(const LayerLaunch& l, size_t i) {
  return i < l.inputs.size() && l.inputs[i].present ? &l.inputs[i] : nullptr;
}
inline LayerOutput* output_at(LayerLaunch& l, size_t i) {
  return i < l.outputs.size() && l.outputs[i].present ? &l.outputs[i] : nullptr;
}
inline std::string input_name(const ir::Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : std::string(); }

// "" when every present input i of `n` in `which` has one of `ok` dtypes (or an unknown dtype).
inline std::string check_dtypes(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> which,
                                std::initializer_list<DType> ok, const char* what) {
  for (size_t i : which) {
    const std::string v = input_name(n, i);
    if (v.empty()) continue;
    const DType d = value_dtype(g, v);
    if (d != DType::kUndefined && !dtype_is_one_of(d, ok))
      return "input " + std::to_string(i) + " is " + dtype_name(d) + ": the CUDA layer takes " + what;
  }
  return "";
}

// Scratch rows of `total` doubles the context workspace holds (throws when not even one).
inline int64_t scratch_rows(const LayerLaunch& l, int64_t total, const std::string& node) {
  const int64_t per_row = (total > 0 ? total : 1) * static_cast<int64_t>(sizeof(double));
  const int64_t rows = l.workspace ? static_cast<int64_t>(l.workspace_bytes) / per_row : 0;
  KILNRT_CHECK(rows > 0, kUnsupported, node,
               "a key length of " << total << " needs " << per_row << " bytes of workspace per query row, the context "
                                  << "has " << l.workspace_bytes);
  return rows;
}

}  // namespace kilnrt::backends::cuda
