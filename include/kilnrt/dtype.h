// Element types. The numeric values are ONNX's TensorProto.DataType values, so they convert 1:1.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kilnrt {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Size of one element in bytes; 0 for kUndefined.
size_t dtype_size(DType t);
// Short lower-case name: "float32", "float16", "bfloat16", "int64", ...
const char* dtype_name(DType t);
// Parses a dtype_name() back; returns kUndefined for an unknown name.
DType dtype_from_name(const std::string& name);
// True for dtypes kilnrt knows (the enum values above except kUndefined).
bool dtype_is_valid(int32_t onnx_type);
bool dtype_is_float(DType t);

// IEEE half and bfloat16 conversion (round to nearest even; NaN and inf preserved).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace kilnrt
