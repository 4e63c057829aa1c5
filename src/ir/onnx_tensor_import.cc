// TensorProto -> Tensor for the ONNX importer: raw, typed and external data (kept inside the model's folder), and
// ONNX element types.
#include "ir/onnx_import_detail.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "core/check.h"
#include "core/file_io.h"
#include "core/logging.h"
#include "ir/protobuf_reader.h"

namespace kilnrt::ir::onnx_detail {
namespace {

using pb::FieldPath;
using pb::Reader;
using pb::WireType;

// ---- ONNX data types --------------------------------------------------------------------------------------

const char* onnx_type_name(int32_t code) {
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",      "UINT8",      "INT8",         "UINT16",         "INT16",      "INT32",
      "INT64",     "STRING",     "BOOL",       "FLOAT16",      "DOUBLE",         "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16",   "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",     "INT4",       "FLOAT4E2M1", "FLOAT8E8M0",   "UINT2"};
  if (code >= 0 && code < static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "unknown";
}

}  // namespace

DType dtype_from_onnx(int64_t code, const std::string& where, const std::string& what) {
  if (code == 0) KILNRT_THROW(kInvalidModel, where, what << " has no data_type (UNDEFINED)");
  if (code < 0 || code > kOnnxLastKnown) KILNRT_THROW(kInvalidModel, where, what << " has unknown data_type " << code);
  const auto c = static_cast<int32_t>(code);
  if (!dtype_is_valid(c)) {
    KILNRT_THROW(kUnsupported, where,
                 what << " has data_type " << onnx_type_name(c) << " (" << c << "), which kilnrt does not support");
  }
  return static_cast<DType>(c);
}

namespace {

// ---- TensorProto ------------------------------------------------------------------------------------------

struct TensorFields {
  std::string name;
  int64_t data_type = 0;
  std::vector<int64_t> dims;
  bool has_raw = false;
  std::string_view raw;
  std::vector<float> float_data;
  std::vector<int64_t> int32_data, int64_data, uint64_data;
  std::vector<double> double_data;
  size_t string_count = 0;
  bool has_segment = false;
  int64_t data_location = 0;
  std::vector<std::pair<std::string, std::string>> external;
};

std::pair<std::string, std::string> read_string_pair(Reader r) {
  std::pair<std::string, std::string> kv;
  while (r.next()) {
    if (r.field() == 1)
      kv.first = r.read_string();
    else if (r.field() == 2)
      kv.second = r.read_string();
    else
      r.skip();
  }
  return kv;
}

TensorFields read_tensor_fields(Reader r) {
  TensorFields t;
  int64_t external_index = 0;
  while (r.next()) {
    switch (r.field()) {
      case 1: r.read_repeated_varint(&t.dims); break;
      case 2: t.data_type = r.read_int64(); break;
      case 3:
        t.has_segment = true;
        r.skip();
        break;
      case 4: r.read_repeated_float(&t.float_data); break;
      case 5: r.read_repeated_varint(&t.int32_data); break;
      case 6:
        ++t.string_count;
        r.skip();
        break;
      case 7: r.read_repeated_varint(&t.int64_data); break;
      case 8: t.name = r.read_string(); break;
      case 9:
        if (t.has_raw) r.fail("raw_data given twice");
        t.raw = r.read_bytes();
        t.has_raw = true;
        break;
      case 10: r.read_repeated_double(&t.double_data); break;
      case 11: r.read_repeated_varint(&t.uint64_data); break;
      case 13: {
        FieldPath p(r.path(), "external_data", external_index++);
        t.external.push_back(read_string_pair(r.read_message(&p)));
        break;
      }
      case 14: t.data_location = r.read_int64(); break;
      default: r.skip();
    }
  }
  return t;
}

// Strict decimal parse of an external-data offset/length.
int64_t parse_external_number(const std::string& text, const std::string& key, const std::string& where) {
  KILNRT_CHECK(!text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos,
               kInvalidModel, where, "external_data '" << key << "' is not a non-negative integer: '" << text << "'");
  return std::stoll(text);
}

// Rejects locations that are absolute or climb out of the model directory; returns the joined path.
std::filesystem::path external_data_path(const std::string& location, const ImportContext& ctx,
                                         const std::string& where) {
  KILNRT_CHECK(!location.empty(), kInvalidModel, where, "external_data has no 'location'");
  KILNRT_CHECK(location.find('\0') == std::string::npos, kInvalidModel, where,
               "external_data location contains a NUL byte");
  const bool absolute = location[0] == '/' || location[0] == '\\' ||
                        (location.size() >= 2 && location[1] == ':');  // "C:\..." written on Windows
  KILNRT_CHECK(!absolute, kInvalidModel, where,
               "external_data location '" << location << "' is an absolute path; it must be relative to the model");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    KILNRT_CHECK(location.compare(start, end - start, "..") != 0, kInvalidModel, where,
                 "external_data location '" << location << "' escapes the model directory ('..')");
    start = end + 1;
  }
  KILNRT_CHECK(!ctx.base_dir.empty(), kInvalidArgument, where,
               "the model uses external data ('" << location << "') but was given as bytes without a base directory");
  return std::filesystem::path(ctx.base_dir) / location;
}

Tensor read_external_tensor(const TensorFields& t, DType dtype, const Shape& shape, size_t expected_bytes,
                            const ImportContext& ctx, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& [key, value] : t.external) {
    if (key == "location")
      location = value;
    else if (key == "offset")
      offset = parse_external_number(value, key, where);
    else if (key == "length")
      length = parse_external_number(value, key, where);
  }
  const std::filesystem::path file = external_data_path(location, ctx, where);
  std::error_code ec;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    const int err = errno;
    KILNRT_THROW(kIo, where, "cannot open external data file '" << file.string() << "': " << std::strerror(err));
  }
  KILNRT_CHECK(S_ISREG(st.st_mode), kIo, where,
               "cannot read external data file '"
                   << file.string() << "': " << (S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file"));
  const uintmax_t file_size = std::filesystem::file_size(file, ec);
  KILNRT_CHECK(!ec, kIo, where, "cannot stat external data file '" << file.string() << "': " << ec.message());
  KILNRT_CHECK(
      static_cast<uintmax_t>(offset) <= file_size, kInvalidModel, where,
      "external data offset " << offset << " is past the end of '" << file.string() << "' (" << file_size << " bytes)");
  if (length < 0) length = static_cast<int64_t>(file_size - static_cast<uintmax_t>(offset));
  KILNRT_CHECK(static_cast<uintmax_t>(length) <= file_size - static_cast<uintmax_t>(offset), kInvalidModel, where,
               "external data range [" << offset << ", " << offset << "+" << length << ") runs past the end of '"
                                       << file.string() << "' (" << file_size << " bytes)");
  KILNRT_CHECK(static_cast<uint64_t>(length) == expected_bytes, kInvalidModel, where,
               "external data holds " << length << " bytes but dims " << shape_to_string(shape) << " of "
                                      << dtype_name(dtype) << " need " << expected_bytes);
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open()) {
    const int err = errno;
    KILNRT_THROW(kIo, where,
                 "cannot open external data file '" << file.string() << "'"
                                                    << (err != 0 ? std::string(": ") + std::strerror(err) : ""));
  }
  Tensor out = Tensor::empty(dtype, shape);
  in.seekg(offset);
  if (expected_bytes > 0) in.read(static_cast<char*>(out.raw()), static_cast<std::streamsize>(expected_bytes));
  KILNRT_CHECK(in.good() || (expected_bytes == 0), kIo, where,
               "reading " << expected_bytes << " bytes at offset " << offset << " of '" << file.string() << "' failed");
  return out;
}

// Copies typed-field integers into a narrow element type after checking each value's range.
template <typename T>
void narrow_ints(const std::vector<int64_t>& src, int64_t lo, int64_t hi, Tensor* out, const std::string& where,
                 const char* field) {
  T* dst = out->data<T>();
  for (size_t i = 0; i < src.size(); ++i) {
    KILNRT_CHECK(src[i] >= lo && src[i] <= hi, kInvalidModel, where,
                 field << "[" << i << "] = " << src[i] << " is out of range for " << dtype_name(out->dtype()));
    dst[i] = static_cast<T>(src[i]);
  }
}

Tensor make_tensor(const TensorFields& t, const ImportContext& ctx, const std::string& where) {
  const DType dtype = dtype_from_onnx(t.data_type, where, "tensor");
  KILNRT_CHECK(!t.has_segment, kUnsupported, where, "segmented tensors (TensorProto.segment) are not supported");
  // Dims: non-negative, element count without overflow.
  int64_t numel = 1;
  const int64_t kMaxNumel = std::numeric_limits<int64_t>::max() / 16;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const int64_t d = t.dims[i];
    KILNRT_CHECK(d >= 0, kInvalidModel, where, "dims[" << i << "] = " << d << " is negative");
    KILNRT_CHECK(d == 0 || numel <= kMaxNumel / d, kInvalidModel, where,
                 "dims " << shape_to_string(t.dims) << " have an absurd element count");
    numel *= d;
  }
  const Shape shape(t.dims.begin(), t.dims.end());
  const size_t expected_bytes = static_cast<size_t>(numel) * dtype_size(dtype);

  const size_t typed_fields = (t.float_data.empty() ? 0 : 1) + (t.int32_data.empty() ? 0 : 1) +
                              (t.int64_data.empty() ? 0 : 1) + (t.double_data.empty() ? 0 : 1) +
                              (t.uint64_data.empty() ? 0 : 1) + (t.string_count == 0 ? 0 : 1);
  KILNRT_CHECK(t.data_location == 0 || t.data_location == 1, kInvalidModel, where,
               "data_location " << t.data_location << " is neither DEFAULT (0) nor EXTERNAL (1)");
  if (t.data_location == 1) {
    KILNRT_CHECK(!t.has_raw && typed_fields == 0, kInvalidModel, where,
                 "tensor has EXTERNAL data_location but also inline data");
    return read_external_tensor(t, dtype, shape, expected_bytes, ctx, where);
  }
  KILNRT_CHECK(t.external.empty(), kInvalidModel, where, "tensor has external_data but data_location is not EXTERNAL");
  KILNRT_CHECK(!(t.has_raw && typed_fields > 0), kInvalidModel, where,
               "tensor has both raw_data and typed data fields");
  KILNRT_CHECK(typed_fields <= 1, kInvalidModel, where, "tensor has data in more than one typed field");

  if (t.has_raw) {
    KILNRT_CHECK(t.raw.size() == expected_bytes, kInvalidModel, where,
                 "raw_data has " << t.raw.size() << " bytes but dims " << shape_to_string(shape) << " of "
                                 << dtype_name(dtype) << " need " << expected_bytes);
    Tensor out = Tensor::empty(dtype, shape);
    if (expected_bytes) std::memcpy(out.raw(), t.raw.data(), expected_bytes);
    return out;
  }

  KILNRT_CHECK(typed_fields > 0 || numel == 0, kInvalidModel, where,
               "tensor with dims " << shape_to_string(shape) << " has no data (no raw_data, typed field or "
                                   << "external data)");
  // Typed fields: which one ONNX uses for each dtype.
  const char* field = nullptr;
  size_t count = 0;
  switch (dtype) {
    case DType::kFloat32:
      field = "float_data";
      count = t.float_data.size();
      break;
    case DType::kInt64:
      field = "int64_data";
      count = t.int64_data.size();
      break;
    case DType::kFloat64:
      field = "double_data";
      count = t.double_data.size();
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      field = "uint64_data";
      count = t.uint64_data.size();
      break;
    default:
      field = "int32_data";
      count = t.int32_data.size();
      break;
  }
  KILNRT_CHECK(typed_fields == 0 || count > 0, kInvalidModel, where,
               "a " << dtype_name(dtype) << " tensor must keep its values in raw_data or " << field);
  KILNRT_CHECK(count == static_cast<size_t>(numel), kInvalidModel, where,
               field << " has " << count << " values but dims " << shape_to_string(shape) << " need " << numel);
  Tensor out = Tensor::empty(dtype, shape);
  if (numel == 0) return out;
  switch (dtype) {
    case DType::kFloat32: std::memcpy(out.raw(), t.float_data.data(), expected_bytes); break;
    case DType::kInt64: std::memcpy(out.raw(), t.int64_data.data(), expected_bytes); break;
    case DType::kFloat64: std::memcpy(out.raw(), t.double_data.data(), expected_bytes); break;
    case DType::kInt32: narrow_ints<int32_t>(t.int32_data, INT32_MIN, INT32_MAX, &out, where, field); break;
    case DType::kInt8: narrow_ints<int8_t>(t.int32_data, -128, 127, &out, where, field); break;
    case DType::kUInt8: narrow_ints<uint8_t>(t.int32_data, 0, 255, &out, where, field); break;
    case DType::kBool: narrow_ints<uint8_t>(t.int32_data, 0, 1, &out, where, field); break;
    case DType::kInt16: narrow_ints<int16_t>(t.int32_data, -32768, 32767, &out, where, field); break;
    case DType::kUInt16: narrow_ints<uint16_t>(t.int32_data, 0, 65535, &out, where, field); break;
    case DType::kUInt32: narrow_ints<uint32_t>(t.uint64_data, 0, UINT32_MAX, &out, where, field); break;
    case DType::kUInt64:  // varints decoded as int64: reinterpret the bits
      for (size_t i = 0; i < t.uint64_data.size(); ++i)
        out.data<uint64_t>()[i] = static_cast<uint64_t>(t.uint64_data[i]);
      break;
    case DType::kFloat16:
    case DType::kBFloat16: {
      // The 16-bit pattern; accept it sign-extended too (some writers go through int16).
      std::vector<int64_t> bits(t.int32_data);
      for (auto& b : bits)
        if (b < 0 && b >= -32768) b += 65536;
      narrow_ints<uint16_t>(bits, 0, 65535, &out, where, field);
      break;
    }
    default: KILNRT_THROW(kUnsupported, where, "typed data for " << dtype_name(dtype) << " tensors is not supported");
  }
  return out;
}

// Where a tensor's errors point: its name if it has one, with the file and field path in front.
std::string tensor_where(const ImportContext& ctx, const Reader& r, const std::string& name) {
  return name.empty() ? location(ctx, r) : location(ctx, r) + " '" + name + "'";
}

}  // namespace

std::pair<std::string, Tensor> decode_tensor(Reader r, const ImportContext& ctx) {
  const Reader start = r;
  TensorFields fields = read_tensor_fields(r);
  Tensor t = make_tensor(fields, ctx, tensor_where(ctx, start, fields.name));
  return {std::move(fields.name), std::move(t)};
}

}  // namespace kilnrt::ir::onnx_detail
