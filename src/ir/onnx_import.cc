// ONNX ModelProto -> ir::Graph. Field numbers are those of onnx/onnx.proto (IR version 10).
#include "ir/onnx_import.h"

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

namespace kilnrt::ir {
namespace {

using pb::FieldPath;
using pb::Reader;
using pb::WireType;

// ---- ONNX data types --------------------------------------------------------------------------------------

// TensorProto.DataType codes that kilnrt's DType does not have (the rest are DType values).
enum OnnxOnlyType : int32_t {
  kOnnxUInt16 = 4,
  kOnnxInt16 = 5,
  kOnnxString = 8,
  kOnnxUInt32 = 12,
  kOnnxUInt64 = 13,
  kOnnxComplex64 = 14,
  kOnnxComplex128 = 15,
  kOnnxLastKnown = 25,  // newest code in onnx.proto (float8/int4/float4/uint2... live in 17..25)
};

const char* onnx_type_name(int32_t code) {
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",      "UINT8",      "INT8",         "UINT16",         "INT16",      "INT32",
      "INT64",     "STRING",     "BOOL",       "FLOAT16",      "DOUBLE",         "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16",   "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",     "INT4",       "FLOAT4E2M1", "FLOAT8E8M0",   "UINT2"};
  if (code >= 0 && code < static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "unknown";
}

// Maps an ONNX element type to a DType. `what` ("tensor 'w'", "input 'x'") and `where` go into the error.
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

// ---- import state -----------------------------------------------------------------------------------------

struct ImportContext {
  std::string label;     // model file name for messages
  std::string base_dir;  // external data directory; "" = external data not allowed
  std::map<std::string, int64_t> opsets;
  std::string producer;
};

std::string path_string(const Reader& r) { return r.path() ? r.path()->to_string() : std::string(); }

// "<label>: <path>" — where an element without a usable name is reported.
std::string location(const ImportContext& ctx, const Reader& r) {
  const std::string p = path_string(r);
  return p.empty() ? ctx.label : ctx.label + ": " + p;
}

std::string normalize_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

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

std::pair<std::string, Tensor> decode_tensor(Reader r, const ImportContext& ctx) {
  const Reader start = r;
  TensorFields fields = read_tensor_fields(r);
  Tensor t = make_tensor(fields, ctx, tensor_where(ctx, start, fields.name));
  return {std::move(fields.name), std::move(t)};
}

// ---- ValueInfoProto / TypeProto ---------------------------------------------------------------------------

struct ValueInfo {
  std::string name;
  bool has_type = false;
  bool is_tensor = false;    // TypeProto.tensor_type (not sequence / map / optional / sparse)
  bool is_sequence = false;  // TypeProto.sequence_type of tensors: elem_type / shape describe the elements
  int64_t elem_type = 0;
  bool has_shape = false;
  SymShape shape;
};

void read_shape(Reader r, ValueInfo* vi) {
  vi->has_shape = true;
  int64_t index = 0;
  while (r.next()) {
    if (r.field() != 1) {
      r.skip();
      continue;
    }
    FieldPath p(r.path(), "dim", index++);
    Reader d = r.read_message(&p);
    Dim dim;
    while (d.next()) {
      if (d.field() == 1) {
        const int64_t v = d.read_int64();
        dim.value = v >= 0 ? v : -1;  // a negative size means "unknown" to some exporters
      } else if (d.field() == 2) {
        dim.param = d.read_string();
      } else {
        d.skip();
      }
    }
    if (dim.value >= 0) dim.param.clear();
    vi->shape.push_back(std::move(dim));
  }
}

void read_tensor_type(Reader r, ValueInfo* vi) {
  while (r.next()) {
    if (r.field() == 1) {
      vi->elem_type = r.read_int64();
    } else if (r.field() == 2) {
      FieldPath p(r.path(), "shape");
      vi->shape.clear();
      read_shape(r.read_message(&p), vi);
    } else {
      r.skip();
    }
  }
}

// TypeProto.Sequence { TypeProto elem_type = 1 }: a sequence of tensors (sequences of maps / sequences are not).
void read_sequence_type(Reader r, ValueInfo* vi) {
  while (r.next()) {
    if (r.field() != 1) {
      r.skip();
      continue;
    }
    FieldPath ep(r.path(), "elem_type");
    Reader elem = r.read_message(&ep);
    while (elem.next()) {
      if (elem.field() == 1) {
        vi->is_sequence = true;
        FieldPath p(elem.path(), "tensor_type");
        read_tensor_type(elem.read_message(&p), vi);
      } else {
        elem.skip();
      }
    }
  }
}

ValueInfo read_value_info(Reader r) {
  ValueInfo vi;
  while (r.next()) {
    if (r.field() == 1) {
      vi.name = r.read_string();
    } else if (r.field() == 2) {
      vi.has_type = true;
      FieldPath tp(r.path(), "type");
      Reader type = r.read_message(&tp);
      while (type.next()) {
        if (type.field() == 1) {
          vi.is_tensor = true;
          FieldPath p(type.path(), "tensor_type");
          read_tensor_type(type.read_message(&p), &vi);
        } else if (type.field() == 4) {
          FieldPath p(type.path(), "sequence_type");
          read_sequence_type(type.read_message(&p), &vi);
        } else {
          type.skip();
        }
      }
    } else {
      r.skip();
    }
  }
  return vi;
}

// ---- NodeProto / AttributeProto / GraphProto --------------------------------------------------------------

Graph decode_graph(Reader r, const ImportContext& ctx, bool top_level);

// AttributeProto.AttributeType codes.
enum AttrType : int64_t {
  kAttrUndefined = 0,
  kAttrFloat = 1,
  kAttrInt = 2,
  kAttrString = 3,
  kAttrTensor = 4,
  kAttrGraph = 5,
  kAttrFloats = 6,
  kAttrInts = 7,
  kAttrStrings = 8,
  kAttrTensors = 9,
  kAttrGraphs = 10,
  kAttrSparseTensor = 11,
  kAttrSparseTensors = 12,
  kAttrTypeProto = 13,
  kAttrTypeProtos = 14,
};

std::pair<std::string, Attribute> decode_attribute(Reader r, const ImportContext& ctx, const std::string& node_where) {
  const Reader start = r;
  std::string name, ref_attr_name;
  int64_t type = kAttrUndefined;
  Attribute a;
  std::vector<int64_t> seen;  // AttrType of each value field present, for models that omit `type`
  while (r.next()) {
    switch (r.field()) {
      case 1: name = r.read_string(); break;
      case 2:
        a.f = r.read_float();
        seen.push_back(kAttrFloat);
        break;
      case 3:
        a.i = r.read_int64();
        seen.push_back(kAttrInt);
        break;
      case 4:
        a.s = r.read_string();
        seen.push_back(kAttrString);
        break;
      case 5: {
        FieldPath p(r.path(), "t");
        a.t = decode_tensor(r.read_message(&p), ctx).second;
        seen.push_back(kAttrTensor);
        break;
      }
      case 6: {
        FieldPath p(r.path(), "g");
        a.g = std::make_shared<Graph>(decode_graph(r.read_message(&p), ctx, /*top_level=*/false));
        seen.push_back(kAttrGraph);
        break;
      }
      case 7:
        r.read_repeated_float(&a.floats);
        seen.push_back(kAttrFloats);
        break;
      case 8:
        r.read_repeated_varint(&a.ints);
        seen.push_back(kAttrInts);
        break;
      case 9:
        a.strings.push_back(r.read_string());
        seen.push_back(kAttrStrings);
        break;
      case 10:
        r.skip();
        seen.push_back(kAttrTensors);
        break;
      case 11:
        r.skip();
        seen.push_back(kAttrGraphs);
        break;
      case 14:
        r.skip();
        seen.push_back(kAttrTypeProto);
        break;
      case 15:
        r.skip();
        seen.push_back(kAttrTypeProtos);
        break;
      case 20: type = r.read_int64(); break;
      case 21: ref_attr_name = r.read_string(); break;
      case 22:
        r.skip();
        seen.push_back(kAttrSparseTensor);
        break;
      case 23:
        r.skip();
        seen.push_back(kAttrSparseTensors);
        break;
      default: r.skip();
    }
  }
  const std::string where = node_where + " attribute '" + name + "' (" + location(ctx, start) + ")";
  KILNRT_CHECK(!name.empty(), kInvalidModel, location(ctx, start), node_where << ": attribute without a name");
  KILNRT_CHECK(
      ref_attr_name.empty(), kInvalidModel, where,
      "attribute refers to '" << ref_attr_name << "' (ref_attr_name), which is only valid inside function bodies");
  if (type == kAttrUndefined) {
    std::set<int64_t> kinds(seen.begin(), seen.end());
    KILNRT_CHECK(kinds.size() == 1, kInvalidModel, where, "attribute has no type and no single value to infer it from");
    type = *kinds.begin();
  }
  switch (type) {
    case kAttrFloat: a.kind = Attribute::Kind::kFloat; break;
    case kAttrInt: a.kind = Attribute::Kind::kInt; break;
    case kAttrString: a.kind = Attribute::Kind::kString; break;
    case kAttrTensor:
      KILNRT_CHECK(a.t.defined(), kInvalidModel, where, "TENSOR attribute has no tensor");
      a.kind = Attribute::Kind::kTensor;
      break;
    case kAttrGraph:
      KILNRT_CHECK(a.g != nullptr, kInvalidModel, where, "GRAPH attribute has no graph");
      a.kind = Attribute::Kind::kGraph;
      break;
    case kAttrFloats: a.kind = Attribute::Kind::kFloats; break;
    case kAttrInts: a.kind = Attribute::Kind::kInts; break;
    case kAttrStrings: a.kind = Attribute::Kind::kStrings; break;
    case kAttrTensors:
    case kAttrGraphs:
    case kAttrSparseTensor:
    case kAttrSparseTensors:
    case kAttrTypeProto:
    case kAttrTypeProtos:
      KILNRT_THROW(kUnsupported, where,
                   "attributes of type " << type
                                         << " (TENSORS, GRAPHS, SPARSE_TENSOR(S), "
                                            "TYPE_PROTO(S)) are not supported");
    default: KILNRT_THROW(kInvalidModel, where, "unknown attribute type " << type);
  }
  return {std::move(name), std::move(a)};
}

Node decode_node(Reader r, const ImportContext& ctx) {
  const Reader start = r;
  Node n;
  std::vector<Reader> attrs;
  while (r.next()) {
    switch (r.field()) {
      case 1: n.inputs.push_back(r.read_string()); break;
      case 2: n.outputs.push_back(r.read_string()); break;
      case 3: n.name = r.read_string(); break;
      case 4: n.op_type = r.read_string(); break;
      case 5: {
        // Keep a reader positioned on this field; decode below once name/op_type are known.
        attrs.push_back(r);
        r.skip();
        break;
      }
      case 7: n.domain = normalize_domain(r.read_string()); break;
      default: r.skip();
    }
  }
  const std::string node_where = n.name.empty() ? "node of type '" + n.op_type + "'" : "node '" + n.name + "'";
  KILNRT_CHECK(!n.op_type.empty(), kInvalidModel, location(ctx, start), node_where << " has no op_type");
  for (size_t i = 0; i < attrs.size(); ++i) {
    FieldPath p(start.path(), "attribute", static_cast<int64_t>(i));
    auto [name, attr] = decode_attribute(attrs[i].read_message(&p), ctx, node_where);
    KILNRT_CHECK(n.attrs.count(name) == 0, kInvalidModel, location(ctx, start),
                 node_where << " has attribute '" << name << "' twice");
    n.attrs.emplace(std::move(name), std::move(attr));
  }
  // Legacy (opset < 7) broadcasting: `broadcast=1` + `axis` aligns B with A at `axis`, which numpy broadcasting
  // cannot express in general; reject it clearly rather than compute something else.
  auto def = ctx.opsets.find("");
  if (n.domain.empty() && def != ctx.opsets.end() && def->second < 7 && n.attrs.count("broadcast") &&
      n.attrs.count("axis") && n.op_type != "Gemm") {
    const Attribute& b = n.attrs.at("broadcast");
    KILNRT_CHECK(b.i == 0, kUnsupported, node_where,
                 n.op_type << " uses the legacy (opset " << def->second
                           << ") broadcast=1 with an explicit axis, whose alignment differs from numpy broadcasting; "
                              "re-export with opset_version>=7");
  }
  return n;
}

TensorType tensor_type_of(const Tensor& t) {
  TensorType tt;
  tt.dtype = t.dtype();
  tt.has_shape = true;
  tt.shape = shape_to_sym(t.shape());
  return tt;
}

// A graph input/output's type. Top-level inputs and outputs must be tensors of a supported dtype.
std::optional<TensorType> value_type(const ValueInfo& vi, const std::string& where, const char* what, bool strict) {
  const std::string desc = std::string(what) + " '" + vi.name + "'";
  if (vi.is_sequence && strict)
    KILNRT_THROW(kUnsupported, where,
                 desc << " is a sequence: not supported as engine I/O (sequences are supported "
                         "inside the graph)");
  if (!vi.has_type || !(vi.is_tensor || vi.is_sequence)) {
    if (strict && vi.has_type) KILNRT_THROW(kUnsupported, where, desc << " is not a tensor (sequence/map/optional)");
    if (strict) KILNRT_THROW(kInvalidModel, where, desc << " has no type");
    return std::nullopt;
  }
  if (vi.elem_type == 0 && !strict) return std::nullopt;
  if (!strict && vi.elem_type > 0 && vi.elem_type <= kOnnxLastKnown &&
      !dtype_is_valid(static_cast<int32_t>(vi.elem_type))) {
    return std::nullopt;  // value_info of an intermediate kilnrt cannot hold: drop it, the op will complain
  }
  TensorType tt;
  tt.is_sequence = vi.is_sequence;
  tt.dtype = dtype_from_onnx(vi.elem_type, where, desc);
  tt.has_shape = vi.has_shape;
  tt.shape = vi.shape;
  return tt;
}

Graph decode_graph(Reader r, const ImportContext& ctx, bool top_level) {
  const Reader start = r;
  Graph g;
  g.opsets = ctx.opsets;
  g.producer = ctx.producer;
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<ValueInfo> inputs, outputs, value_infos;
  int64_t n_node = 0, n_init = 0, n_in = 0, n_out = 0, n_vi = 0;
  while (r.next()) {
    switch (r.field()) {
      case 1: {
        FieldPath p(r.path(), "node", n_node++);
        g.nodes.push_back(decode_node(r.read_message(&p), ctx));
        break;
      }
      case 2: g.name = r.read_string(); break;
      case 5: {
        FieldPath p(r.path(), "initializer", n_init++);
        initializers.push_back(decode_tensor(r.read_message(&p), ctx));
        break;
      }
      case 11: {
        FieldPath p(r.path(), "input", n_in++);
        inputs.push_back(read_value_info(r.read_message(&p)));
        break;
      }
      case 12: {
        FieldPath p(r.path(), "output", n_out++);
        outputs.push_back(read_value_info(r.read_message(&p)));
        break;
      }
      case 13: {
        FieldPath p(r.path(), "value_info", n_vi++);
        value_infos.push_back(read_value_info(r.read_message(&p)));
        break;
      }
      case 15: {
        FieldPath p(r.path(), "sparse_initializer");
        Reader sparse = r.read_message(&p);
        KILNRT_THROW(kUnsupported, location(ctx, sparse),
                     "sparse initializers are not supported; convert them to dense initializers before import");
      }
      default: r.skip();
    }
  }
  const std::string gwhere = location(ctx, start);

  // Values and who produces them, to reject a value defined twice.
  std::unordered_map<std::string, std::string> producer_of;
  auto define = [&](const std::string& value, const std::string& by) {
    auto [it, fresh] = producer_of.emplace(value, by);
    KILNRT_CHECK(
        fresh, kInvalidModel, value,
        "value '" << value << "' is produced twice: by " << it->second << " and by " << by << " (" << gwhere << ")");
  };
  for (auto& [name, tensor] : initializers) {
    KILNRT_CHECK(!name.empty(), kInvalidModel, gwhere, "an initializer has no name");
    define(name, "initializer '" + name + "'");
    g.types[name] = tensor_type_of(tensor);
    g.constants.emplace(name, std::move(tensor));
  }
  std::unordered_set<std::string> input_names;
  for (const ValueInfo& vi : inputs) {
    KILNRT_CHECK(!vi.name.empty(), kInvalidModel, gwhere, "a graph input has no name");
    KILNRT_CHECK(input_names.insert(vi.name).second, kInvalidModel, vi.name,
                 "graph input '" << vi.name << "' is listed twice");
    if (g.constants.count(vi.name)) continue;  // an initializer listed as input (old exporters): a constant
    define(vi.name, "graph input '" + vi.name + "'");
    g.inputs.push_back(vi.name);
    if (auto tt = value_type(vi, vi.name, "graph input", top_level)) g.types[vi.name] = *tt;
  }
  for (const ValueInfo& vi : value_infos) {
    if (vi.name.empty() || producer_of.count(vi.name)) continue;
    if (auto tt = value_type(vi, vi.name, "value_info", false)) g.types[vi.name] = *tt;
  }
  std::unordered_set<std::string> output_names;
  for (const ValueInfo& vi : outputs) {
    KILNRT_CHECK(!vi.name.empty(), kInvalidModel, gwhere, "a graph output has no name");
    KILNRT_CHECK(output_names.insert(vi.name).second, kInvalidModel, vi.name,
                 "graph output '" << vi.name << "' is listed twice");
    g.outputs.push_back(vi.name);
    if (producer_of.count(vi.name)) continue;  // an input or initializer passed through: keep its type
    if (auto tt = value_type(vi, vi.name, "graph output", top_level)) g.types[vi.name] = *tt;
  }

  // Unique node names: explicit names first (first occurrence wins), then "<op_type>_<index>" for the rest.
  std::unordered_set<std::string> used;
  std::vector<bool> needs_name(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    needs_name[i] = g.nodes[i].name.empty() || !used.insert(g.nodes[i].name).second;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!needs_name[i]) continue;
    Node& n = g.nodes[i];
    const std::string base = n.name.empty() ? n.op_type + "_" + std::to_string(i) : n.name;
    std::string candidate = base;
    for (int k = 1; used.count(candidate); ++k) candidate = base + "_" + std::to_string(k);
    if (!n.name.empty())
      KILNRT_LOG(kDebug, "onnx import: duplicate node name '" << n.name << "' renamed to '" << candidate << "'");
    n.name = candidate;
    used.insert(candidate);
  }
  for (const Node& n : g.nodes) {
    for (const std::string& out : n.outputs) {
      if (!out.empty()) define(out, "node '" + n.name + "'");
    }
  }
  if (top_level) {
    for (const std::string& out : g.outputs) {
      KILNRT_CHECK(producer_of.count(out), kInvalidModel, out,
                   "graph output '" << out << "' is not produced by any node, input or initializer");
    }
    g.topo_sort();
  }
  return g;
}

// ---- ModelProto -------------------------------------------------------------------------------------------

// The magic of a kilnrt engine file (engine/engine_file.h kEngineMagic; the importer does not depend on engine/).
constexpr char kEngineFileMagic[8] = {'K', 'I', 'L', 'N', 'R', 'T', 'E', 'N'};

// The reason of a wire-format error, short: "unexpected end-group tag for field 13 at byte 2".
std::string short_parse_reason(const Error& e) {
  std::string m = e.message();
  const std::string marker = " (byte offset ";
  const size_t at = m.rfind(marker);
  if (at != std::string::npos && !m.empty() && m.back() == ')')
    m = m.substr(0, at) + " at byte " + m.substr(at + marker.size(), m.size() - 1 - at - marker.size());
  if (m.size() > 120) m = m.substr(0, 117) + "...";
  return m;
}

[[noreturn]] void throw_not_onnx(const std::string& label, const std::string& reason) {
  KILNRT_THROW(kInvalidModel, label, "'" << label << "' is not an ONNX model (" << reason << ")");
}

Graph decode_model(const pb::Source& src, const std::string& base_dir) {
  if (src.size >= sizeof(kEngineFileMagic) && std::memcmp(src.data, kEngineFileMagic, sizeof(kEngineFileMagic)) == 0)
    throw_not_onnx(src.label,
                   "it looks like a kilnrt engine file: run it with `kilnrt run` or load it with kilnrt.Engine");
  if (src.size == 0) throw_not_onnx(src.label, "the file is empty");
  ImportContext ctx;
  ctx.label = src.label;
  ctx.base_dir = base_dir;
  FieldPath root;
  Reader r(src, &root);
  int64_t ir_version = 0;
  bool has_ir_version = false;
  std::string producer_name, producer_version;
  bool has_graph = false;
  Reader graph_reader = r;
  FieldPath graph_path(&root, "graph");
  int64_t n_opset = 0, n_functions = 0;
  std::vector<std::pair<std::string, int64_t>> opset_imports;
  // The ModelProto's own fields: bytes that do not even parse as one are not an ONNX model (a text file, an image,
  // random bytes). The graph's contents are decoded later, and their errors name the field path.
  try {
    while (r.next()) {
      switch (r.field()) {
        case 1:
          ir_version = r.read_int64();
          has_ir_version = true;
          break;
        case 2: producer_name = r.read_string(); break;
        case 3: producer_version = r.read_string(); break;
        case 7:
          if (has_graph) r.fail("two 'graph' fields");
          graph_reader = r.read_message(&graph_path);
          has_graph = true;
          break;
        case 8: {
          FieldPath p(&root, "opset_import", n_opset++);
          Reader o = r.read_message(&p);
          std::string domain;
          int64_t version = 0;
          while (o.next()) {
            if (o.field() == 1)
              domain = normalize_domain(o.read_string());
            else if (o.field() == 2)
              version = o.read_int64();
            else
              o.skip();
          }
          opset_imports.emplace_back(domain, version);
          break;
        }
        case 25:
          ++n_functions;
          r.skip();
          break;
        default: r.skip();
      }
    }
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidModel) throw;
    throw_not_onnx(src.label, short_parse_reason(e));
  }
  // A random file can parse as protobuf; an ONNX model has these three.
  std::string missing;
  if (!has_ir_version) missing += "no ir_version";
  if (!has_graph) missing += std::string(missing.empty() ? "" : ", ") + "no graph";
  if (opset_imports.empty()) missing += std::string(missing.empty() ? "" : ", ") + "no opset_import";
  if (!missing.empty()) throw_not_onnx(src.label, missing);
  for (const auto& [domain, version] : opset_imports) {
    auto [it, fresh] = ctx.opsets.emplace(domain, version);
    KILNRT_CHECK(
        fresh || it->second == version, kInvalidModel, src.label,
        "opset_import lists domain '" << domain << "' twice with versions " << it->second << " and " << version);
  }
  KILNRT_CHECK(ir_version >= kMinOnnxIrVersion, kInvalidModel, src.label,
               "ONNX ir_version " << ir_version << " is too old (kilnrt needs " << kMinOnnxIrVersion
                                  << " or newer): re-export the model with a recent exporter (opset_version>="
                                  << kFirstFullySupportedOpset << ")");
  auto def = ctx.opsets.find("");
  const int64_t opset = def == ctx.opsets.end() ? 0 : def->second;
  if (def == ctx.opsets.end() && !ctx.opsets.empty()) {
    // Only other domains (e.g. ai.onnx.preview.training): fine as long as no node uses the default domain.
    ctx.producer = producer_name;
    if (!producer_version.empty()) ctx.producer += (ctx.producer.empty() ? "" : " ") + producer_version;
    Graph g = decode_graph(graph_reader, ctx, /*top_level=*/true);
    for (const Node& n : g.nodes)
      KILNRT_CHECK(!n.domain.empty(), kInvalidModel, src.label,
                   "node '" << n.name << "' (" << n.op_type
                            << ") is in the default domain, but the model imports no default-domain opset");
    return g;
  }
  KILNRT_CHECK(
      opset >= kMinOnnxOpset, kInvalidModel, src.label,
      "default-domain opset " << opset << ": opset " << kMinOnnxOpset
                              << " or newer required, re-export with opset_version>=" << kFirstFullySupportedOpset);
  if (opset < kFirstFullySupportedOpset) {
    KILNRT_LOG(kWarning, src.label << ": default-domain opset " << opset << " is older than "
                                   << kFirstFullySupportedOpset
                                   << ": importing with each op's semantics of that opset where kilnrt has them "
                                      "(nodes of ops it lacks at that opset are reported as unsupported); "
                                      "re-export with opset_version>="
                                   << kFirstFullySupportedOpset << " for full support");
  }
  if (opset > kMaxTestedOpset) {
    KILNRT_LOG(kWarning, src.label << ": opset " << opset << " is newer than the newest kilnrt was tested with ("
                                   << kMaxTestedOpset << "); importing anyway");
  }
  if (n_functions > 0) {
    KILNRT_LOG(kWarning, src.label << ": the model defines " << n_functions
                                   << " local function(s); they are not inlined, and nodes calling them will be "
                                      "reported as unsupported ops");
  }
  ctx.producer = producer_name;
  if (!producer_version.empty()) ctx.producer += (ctx.producer.empty() ? "" : " ") + producer_version;
  return decode_graph(graph_reader, ctx, /*top_level=*/true);
}

}  // namespace

Graph import_onnx_bytes(const void* data, size_t size, const std::string& base_dir, const std::string& label) {
  KILNRT_CHECK(data != nullptr || size == 0, kInvalidArgument, label, "null model data");
  pb::Source src{label.empty() ? std::string("<memory>") : label, static_cast<const uint8_t*>(data), size};
  return decode_model(src, base_dir);
}

Graph import_onnx_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_whole_file(path);  // kIo with the OS's reason
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  if (base_dir.empty()) base_dir = ".";
  return import_onnx_bytes(bytes.data(), bytes.size(), base_dir, path);
}

}  // namespace kilnrt::ir
