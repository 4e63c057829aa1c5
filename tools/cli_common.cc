// Helpers shared by the CLI commands: value summaries, random inputs, file names.
#include "cli_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

namespace kilnrt_cli {
namespace {

// Element `i` of a host tensor as double (bfloat16 / float16 decoded).
double element_as_double(const kilnrt::Tensor& t, int64_t i) {
  using kilnrt::DType;
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return kilnrt::half_to_float(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return kilnrt::bfloat16_to_float(t.data<uint16_t>()[i]);
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] ? 1.0 : 0.0;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::string summarize_values(const kilnrt::Tensor& tensor, int first_count) {
  const int64_t n = tensor.numel();
  if (n == 0) return "(empty)";
  if (tensor.dtype() == kilnrt::DType::kUndefined) return "(undefined)";
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0.0;
  int64_t non_finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = element_as_double(tensor, i);
    if (!std::isfinite(v)) {
      ++non_finite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::ostringstream os;
  if (non_finite == n) {
    os << "all " << n << " values non-finite";
  } else {
    os << "min " << format_number(lo) << " max " << format_number(hi) << " mean "
       << format_number(sum / static_cast<double>(n - non_finite));
    if (non_finite) os << " (" << non_finite << " non-finite)";
  }
  os << " first [";
  const int64_t shown = std::min<int64_t>(n, first_count);
  for (int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << format_number(element_as_double(tensor, i));
  os << (n > shown ? ", ...]" : "]");
  return os.str();
}

kilnrt::Tensor random_tensor(kilnrt::DType dtype, const kilnrt::Shape& shape, unsigned seed) {
  using kilnrt::DType;
  kilnrt::Tensor t = kilnrt::Tensor::empty(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small_int(0, 9);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kFloat32: t.data<float>()[i] = real(rng); break;
      case DType::kFloat64: t.data<double>()[i] = real(rng); break;
      case DType::kFloat16: t.data<uint16_t>()[i] = kilnrt::float_to_half(real(rng)); break;
      case DType::kBFloat16: t.data<uint16_t>()[i] = kilnrt::float_to_bfloat16(real(rng)); break;
      case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(small_int(rng)); break;
      case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(small_int(rng)); break;
      case DType::kInt32: t.data<int32_t>()[i] = small_int(rng); break;
      case DType::kInt64: t.data<int64_t>()[i] = small_int(rng); break;
      case DType::kBool: t.data<uint8_t>()[i] = static_cast<uint8_t>(small_int(rng) & 1); break;
      default:
        throw kilnrt::Error(kilnrt::ErrorCode::kUnsupported,
                            std::string("cannot make random values of dtype ") + kilnrt::dtype_name(dtype));
    }
  }
  return t;
}

std::string sanitize_file_name(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string human_bytes(unsigned long long bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof(buf), "%llu B", bytes);
  else
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace kilnrt_cli
