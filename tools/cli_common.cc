// Helpers shared by the CLI commands: value summaries, random inputs, file names.
#include "cli_common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
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

// ---- Conventions ------------------------------------------------------------------------------------------------

GlobalOptions& global_options() {
  static GlobalOptions options;
  return options;
}

void require_readable_file(const std::string& path, const std::string& what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    throw kilnrt::Error(kilnrt::ErrorCode::kIo, "cannot open the " + what + ": " + std::strerror(err), path);
  }
  std::fclose(f);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw kilnrt::Error(kilnrt::ErrorCode::kIo, "cannot read the " + what + ": " + std::strerror(EISDIR), path);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base == "/" ? base + name : base + "/" + name;
}

std::string plural(int64_t count, const std::string& singular, const std::string& plural_form) {
  const std::string many = plural_form.empty() ? singular + "s" : plural_form;
  return std::to_string(count) + " " + (count == 1 ? singular : many);
}

std::string dims_text(const kilnrt::Shape& shape, const std::vector<std::string>& dim_names) {
  std::string out = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) out += ", ";
    if (shape[d] >= 0)
      out += std::to_string(shape[d]);
    else
      out += d < dim_names.size() && !dim_names[d].empty() ? dim_names[d] : "?";
  }
  return out + "]";
}

std::string seconds_text(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), seconds < 10.0 ? "%.2f s" : "%.1f s", seconds);
  return buf;
}

// ---- Option validators ------------------------------------------------------------------------------------------

CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        long long v = 0;
        size_t used = 0;
        try {
          v = std::stoll(value, &used);
        } catch (const std::exception&) {
          return "expected an integer, got '" + value + "'";
        }
        if (used != value.size()) return "expected an integer, got '" + value + "'";
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + value;
        return "";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          return "expected a number, got '" + value + "'";
        }
        if (used != value.size() || !std::isfinite(v)) return "expected a number, got '" + value + "'";
        if (v < 0) return "must not be negative, got " + value;
        return "";
      },
      "NUMBER>=0");
}

CLI::Validator shape_spec_check() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        kilnrt::InputProfile p;
        try {
          p = kilnrt::parse_shape_spec(value);
        } catch (const kilnrt::Error& e) {
          return "bad shape '" + value + "': " + e.message();
        }
        for (const kilnrt::Shape* s : {&p.min, &p.opt, &p.max})
          for (int64_t d : *s)
            if (d < 1) return "bad shape '" + value + "': every dimension must be at least 1, got " + std::to_string(d);
        return "";
      },
      "NAME:DIMS");
}

DeviceChoice parse_device_choice(const std::string& spec) {
  DeviceChoice c;
  c.spec = spec;
  if (spec.empty() || spec == "cpu") return c;
  if (spec == "cuda") {
    c.cuda = true;
    return c;
  }
  if (spec.rfind("cuda:", 0) == 0 && spec.size() > 5 && spec.size() <= 9 &&
      spec.find_first_not_of("0123456789", 5) == std::string::npos) {
    c.cuda = true;
    c.ordinal = std::stoi(spec.substr(5));
    return c;
  }
  throw UsageError("--device: expected cpu, cuda or cuda:N, got '" + spec + "'");
}

CLI::Validator device_check() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          parse_device_choice(value);
        } catch (const UsageError&) {
          return "expected cpu, cuda or cuda:N (N: the GPU ordinal), got '" + value + "'";
        }
        return "";
      },
      "cpu|cuda|cuda:N");
}

// ---- Devices ----------------------------------------------------------------------------------------------------

std::shared_ptr<kilnrt::Engine> load_engine_for(const std::string& path, const std::string& device) {
  const DeviceChoice choice = parse_device_choice(device);
  require_readable_file(path, "engine file");
  auto engine = kilnrt::Engine::load(path, choice.ordinal);
  if (choice.spec.empty()) return engine;
  const kilnrt::EngineHeaderInfo& h = engine->header();
  if (choice.cuda && engine->device() < 0)
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                        "this is a CPU engine (target " + h.target + "), it cannot run with --device " + choice.spec +
                            ": run it with --device cpu, or build a CUDA engine with `kilnrt build MODEL.onnx "
                            "--device cuda`",
                        path);
  if (!choice.cuda && engine->device() >= 0)
    throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                        "this is a CUDA engine (target " + h.target + (h.gpu_name.empty() ? "" : ", " + h.gpu_name) +
                            "), it cannot run with --device cpu: run it with --device cuda or cuda:N, or build a "
                            "CPU engine with `kilnrt build MODEL.onnx --device cpu`",
                        path);
  return engine;
}

// ---- Output -----------------------------------------------------------------------------------------------------

void write_json(const std::string& dest, std::string text) {
  if (text.empty() || text.back() != '\n') text += '\n';
  if (dest == "-") {
    std::cout << text;
    std::cout.flush();  // a failed write is reported at exit (kilnrt_main.cc checks standard output)
    return;
  }
  std::ofstream f(dest, std::ios::binary);
  if (!f) {
    const int err = errno;
    throw kilnrt::Error(kilnrt::ErrorCode::kIo, std::string("cannot write the JSON file: ") + std::strerror(err), dest);
  }
  f << text;
  f.close();
  if (!f) throw kilnrt::Error(kilnrt::ErrorCode::kIo, "error writing the JSON file", dest);
}

}  // namespace kilnrt_cli
