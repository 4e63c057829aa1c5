// NumPy .npy reader/writer: magic "\x93NUMPY", version, header length, a Python-dict header
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded to 64 bytes, then the raw data.
#include "kilnrt/npy.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/file_io.h"

namespace kilnrt {
namespace {

const char* descr_of(DType t) {
  switch (t) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat16: return "<f2";
    case DType::kFloat64: return "<f8";
    case DType::kInt64: return "<i8";
    case DType::kInt32: return "<i4";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    case DType::kBFloat16: return "<u2";  // numpy has no bfloat16: stored as raw uint16
    default: return nullptr;
  }
}

DType dtype_of_descr(const std::string& d) {
  static const std::pair<const char*, DType> table[] = {
      {"<f4", DType::kFloat32},
      {"<f2", DType::kFloat16},
      {"<f8", DType::kFloat64},
      {"<i8", DType::kInt64},
      {"<i4", DType::kInt32},
      {"|i1", DType::kInt8},
      {"|u1", DType::kUInt8},
      {"|b1", DType::kBool},
      // "<u2" (what numpy writes for uint16) is read as bfloat16 bits, kilnrt's bfloat16 convention; "=u2" as uint16.
      {"<u2", DType::kBFloat16},
      {"=u2", DType::kUInt16},
      {"<i2", DType::kInt16},
      {"<u4", DType::kUInt32},
      {"<u8", DType::kUInt64},
      {"=f4", DType::kFloat32},
      {"=i8", DType::kInt64}};
  for (auto& e : table)
    if (d == e.first) return e.second;
  return DType::kUndefined;
}

std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  KILNRT_CHECK(k != std::string::npos, kInvalidArgument, path, "npy header has no '" << key << "'");
  size_t colon = header.find(':', k);
  KILNRT_CHECK(colon != std::string::npos, kInvalidArgument, path, "malformed npy header");
  size_t start = header.find_first_not_of(' ', colon + 1);
  KILNRT_CHECK(start != std::string::npos, kInvalidArgument, path, "malformed npy header");
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    KILNRT_CHECK(end != std::string::npos, kInvalidArgument, path, "malformed npy header");
    return header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '(') {
    end = header.find(')', start);
    KILNRT_CHECK(end != std::string::npos, kInvalidArgument, path, "malformed npy header");
    return header.substr(start, end - start + 1);
  }
  end = header.find_first_of(",}", start);
  return header.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The 'shape' value, a Python tuple of non-negative ints: "()", "(5,)", "(2, 3)" (spaces anywhere, a trailing comma
// allowed). Anything else (signs, floats, strings, missing commas, values past int64) is refused naming the file.
Shape parse_shape(const std::string& text, const std::string& path) {
  auto bad = [&](const std::string& why) {
    KILNRT_THROW(kInvalidArgument, path, "malformed npy shape '" << text << "': " << why);
  };
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  };
  if (text.empty() || text.front() != '(' || text.back() != ')') bad("not a tuple");
  const size_t end = text.size() - 1;
  i = 1;
  Shape shape;
  skip_spaces();
  while (i < end) {
    if (text[i] < '0' || text[i] > '9') bad("dims must be non-negative integers");
    int64_t v = 0;
    while (i < end && text[i] >= '0' && text[i] <= '9') {
      if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, int64_t(text[i] - '0'), &v))
        bad("a dim exceeds int64");
      ++i;
    }
    shape.push_back(v);
    skip_spaces();
    if (i == end) break;
    if (text[i] != ',') bad("dims must be separated by commas");
    ++i;
    skip_spaces();
  }
  // The element count must be representable too (the data size check then bounds it by the file).
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) bad("the element count exceeds int64");
  return shape;
}

}  // namespace

Tensor load_npy(const std::string& path) {
  ::close(open_for_reading(path));  // kIo with the OS's reason: missing, unreadable, a directory
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f.good()) throw_file_error("cannot open", path, errno);
  char magic[8];
  f.read(magic, 8);
  KILNRT_CHECK(f.good() && std::memcmp(magic, "\x93NUMPY", 6) == 0, kInvalidArgument, path, "not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  }
  KILNRT_CHECK(f.good() && header_len < (1u << 20), kInvalidArgument, path, "bad .npy header length");
  std::string header(header_len, '\0');
  f.read(&header[0], header_len);
  KILNRT_CHECK(f.good(), kInvalidArgument, path, "truncated .npy header");
  const std::string descr = header_value(header, "descr", path);
  const DType dtype = dtype_of_descr(descr);
  KILNRT_CHECK(dtype != DType::kUndefined, kUnsupported, path, "unsupported .npy dtype '" << descr << "'");
  KILNRT_CHECK(header_value(header, "fortran_order", path).find("False") == 0, kUnsupported, path,
               "Fortran-ordered .npy arrays are not supported (save with np.ascontiguousarray)");
  const Shape shape = parse_shape(header_value(header, "shape", path), path);
  // The data is exactly the array: its byte count is checked (overflow included) before anything is allocated.
  uint64_t nbytes = dtype_size(dtype);
  for (int64_t d : shape)
    KILNRT_CHECK(!__builtin_mul_overflow(nbytes, static_cast<uint64_t>(d), &nbytes), kInvalidArgument, path,
                 "npy shape " << shape_to_string(shape) << " is too large");
  const std::streamoff data_at = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff file_end = f.tellg();
  KILNRT_CHECK(f.good() && data_at >= 0 && file_end >= data_at, kInvalidArgument, path, "cannot size the .npy data");
  const auto data_bytes = static_cast<uint64_t>(file_end - data_at);
  KILNRT_CHECK(data_bytes == nbytes, kInvalidArgument, path,
               ".npy data has " << data_bytes << " bytes but shape " << shape_to_string(shape) << " of "
                                << dtype_name(dtype) << " needs " << nbytes
                                << (data_bytes < nbytes ? " (truncated)" : " (trailing bytes)"));
  f.seekg(data_at);
  Tensor t = Tensor::empty(dtype, shape);
  f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  KILNRT_CHECK(f.gcount() == static_cast<std::streamsize>(t.nbytes()), kInvalidArgument, path,
               "truncated .npy data: expected " << t.nbytes() << " bytes for shape " << shape_to_string(shape));
  return t;
}

void save_npy(const std::string& path, const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  KILNRT_CHECK(descr != nullptr, kUnsupported, path, "cannot save dtype " << dtype_name(t.dtype()) << " as .npy");
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i)
    h << t.shape()[i] << (t.shape().size() == 1 || i + 1 < t.shape().size() ? ", " : "");
  h << "), }";
  std::string header = h.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  errno = 0;
  std::ofstream f(path, std::ios::binary);
  if (!f.good()) throw_file_error("cannot write", path, errno);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(lb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  f.close();
  if (f.fail()) throw_file_error("cannot write", path, errno);
}

}  // namespace kilnrt
