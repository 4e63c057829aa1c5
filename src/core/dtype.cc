#include "kilnrt/dtype.h"

#include <cmath>

namespace kilnrt {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32: return 4;
    case DType::kInt64:
    case DType::kFloat64:
    case DType::kUInt64: return 8;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

DType dtype_from_name(const std::string& name) {
  for (DType t :
       {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt8,
        DType::kUInt8, DType::kBool, DType::kInt16, DType::kUInt16, DType::kUInt32, DType::kUInt64})
    if (name == dtype_name(t)) return t;
  if (name == "float") return DType::kFloat32;
  if (name == "half") return DType::kFloat16;
  return DType::kUndefined;
}

bool dtype_is_valid(int32_t v) {
  switch (v) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 16: return true;
    default: return false;
  }
}

bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? (0x200u | ((abs >> 13) & 0x3ffu)) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                                      // subnormal half or zero: value = abs * 2^24 rounded
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to zero
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e) ... mantissa shift so that result is in units of 2^-24
    const uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = h + ((rem > half || (rem == half && (h & 1))) ? 1 : 0);
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while (!(m & 0x400u)) {
        m <<= 1;
        ++shift;
      }
      m &= 0x3ffu;
      x = sign | (static_cast<uint32_t>(113 - shift) << 23) | (m << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace kilnrt
