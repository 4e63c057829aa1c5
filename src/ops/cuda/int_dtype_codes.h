// The integer dtype codes of cuda/kernels/int_codes.h (kI8 ... kU64) of a DType, for the layers of the integer
// kernels, and the check that a node's first inputs are integers of one dtype.
#pragma once
#include <string>

#include "cuda/kernels/int_codes.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// The integer dtype codes (kI8 ... kU64) for the integer dtypes a kernel takes, -1 for others: every integer dtype
// (the bit ops), or only int8 / uint8 / int16 / uint16 / int32 (the quantize kernels).
enum class IntCodes { kAll, kQuantized };
inline int int_dtype_code(DType t, IntCodes accepted = IntCodes::kAll) {
  const bool all = accepted == IntCodes::kAll;
  switch (t) {
    case DType::kInt8: return kilnrt::cuda::kernels::kI8;
    case DType::kUInt8: return kilnrt::cuda::kernels::kU8;
    case DType::kInt16: return kilnrt::cuda::kernels::kI16;
    case DType::kUInt16: return kilnrt::cuda::kernels::kU16;
    case DType::kInt32: return kilnrt::cuda::kernels::kI32;
    case DType::kUInt32: return all ? kilnrt::cuda::kernels::kU32 : -1;
    case DType::kInt64: return all ? kilnrt::cuda::kernels::kI64 : -1;
    case DType::kUInt64: return all ? kilnrt::cuda::kernels::kU64 : -1;
    default: return -1;
  }
}

inline std::string integer_inputs(const ir::Node& n, const ir::Graph& g, size_t count) {
  if (n.inputs.size() < count) return "needs " + std::to_string(count) + " inputs";
  const DType t0 = value_dtype(g, n.inputs[0]);
  for (size_t i = 0; i < count; ++i) {
    const DType t = value_dtype(g, n.inputs[i]);
    if (int_dtype_code(t) < 0)
      return std::string("dtype ") + dtype_name(t) + " of input " + std::to_string(i) +
             " (the CUDA layer takes integers)";
    if (t != t0) return "mixed input dtypes";
  }
  return "";
}

}  // namespace kilnrt::backends::cuda
