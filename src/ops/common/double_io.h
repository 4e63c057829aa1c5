// Small helpers for CPU reference kernels that compute in double: read any float tensor (float32/float64/float16/
// bfloat16) or integer tensor as doubles, and build a tensor of a given dtype from doubles.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"
#include "ir/graph.h"
#include "kilnrt/dtype.h"
#include "kilnrt/tensor.h"

namespace kilnrt::ops {

inline std::vector<double> tensor_to_doubles(const Tensor& t, const ir::Node& node) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  const size_t n = v.size();
  switch (t.dtype()) {
    case DType::kFloat32:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<float>()[i];
      break;
    case DType::kFloat64:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<double>()[i];
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < n; ++i) v[i] = half_to_float(t.data<uint16_t>()[i]);
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < n; ++i) v[i] = bfloat16_to_float(t.data<uint16_t>()[i]);
      break;
    case DType::kInt64:
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(t.data<int64_t>()[i]);
      break;
    case DType::kInt32:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<int32_t>()[i];
      break;
    case DType::kInt8:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<int8_t>()[i];
      break;
    case DType::kUInt8:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<uint8_t>()[i];
      break;
    case DType::kInt16:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<int16_t>()[i];
      break;
    case DType::kUInt16:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<uint16_t>()[i];
      break;
    case DType::kUInt32:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<uint32_t>()[i];
      break;
    case DType::kUInt64:
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(t.data<uint64_t>()[i]);
      break;
    case DType::kBool:
      for (size_t i = 0; i < n; ++i) v[i] = t.data<bool>()[i] ? 1.0 : 0.0;
      break;
    default:
      KILNRT_THROW(kUnsupported, node.describe(),
                   node.op_type << ": dtype " << dtype_name(t.dtype()) << " is not supported by the CPU kernel");
  }
  return v;
}

// double -> integer without undefined behaviour: truncation toward zero, NaN -> 0, out-of-range values saturate
// (a plain static_cast of NaN or of an out-of-range value is undefined; found by fuzzing QuantizeLinear, scale 0).
template <typename I>
inline I saturate_to_int(double x) {
  if (x != x) return 0;
  if (x <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (x >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(x);
}

// Integer dtypes are filled by truncation toward zero (callers round first where ONNX asks for it); NaN gives 0 and
// out-of-range values saturate.
inline Tensor tensor_from_doubles(const std::vector<double>& v, DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(dtype, shape);
  const size_t n = v.size();
  switch (dtype) {
    case DType::kFloat32:
      for (size_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(v[i]);
      break;
    case DType::kFloat64:
      for (size_t i = 0; i < n; ++i) t.data<double>()[i] = v[i];
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v[i]));
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v[i]));
      break;
    case DType::kInt64:
      for (size_t i = 0; i < n; ++i) t.data<int64_t>()[i] = saturate_to_int<int64_t>(v[i]);
      break;
    case DType::kInt32:
      for (size_t i = 0; i < n; ++i) t.data<int32_t>()[i] = saturate_to_int<int32_t>(v[i]);
      break;
    case DType::kInt8:
      for (size_t i = 0; i < n; ++i) t.data<int8_t>()[i] = saturate_to_int<int8_t>(v[i]);
      break;
    case DType::kUInt8:
      for (size_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = saturate_to_int<uint8_t>(v[i]);
      break;
    case DType::kInt16:
      for (size_t i = 0; i < n; ++i) t.data<int16_t>()[i] = saturate_to_int<int16_t>(v[i]);
      break;
    case DType::kUInt16:
      for (size_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = saturate_to_int<uint16_t>(v[i]);
      break;
    case DType::kUInt32:
      for (size_t i = 0; i < n; ++i) t.data<uint32_t>()[i] = saturate_to_int<uint32_t>(v[i]);
      break;
    case DType::kUInt64:
      for (size_t i = 0; i < n; ++i) t.data<uint64_t>()[i] = saturate_to_int<uint64_t>(v[i]);
      break;
    case DType::kBool:
      for (size_t i = 0; i < n; ++i) t.data<bool>()[i] = v[i] != 0.0;
      break;
    default: break;
  }
  return t;
}

inline const std::vector<DType>& all_float_dtypes() {
  static const std::vector<DType> v = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
  return v;
}

}  // namespace kilnrt::ops
