// A tiny ONNX protobuf *writer* for building test models in C++ tests (header-only, no libprotobuf).
//
//   using namespace kilnrt::onnx_test;
//   ModelSpec m;                                   // ir_version 8, opset {"", 17}
//   m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4}));
//   m.graph.initializers.push_back(TensorSpec::float_raw("w", {4}, {1, 2, 3, 4}));
//   m.graph.nodes.push_back(NodeSpec{"Add", {"x", "w"}, {"y"}});
//   m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 4}));
//   std::string bytes = m.serialize();
// Field numbers follow onnx/onnx.proto. Everything is public and plain so tests can also write malformed models
// (wrong sizes, bad attribute types, escaping external-data paths, ...).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace kilnrt::onnx_test {

// ONNX TensorProto.DataType codes.
enum ElemType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kBFloat16 = 16,
};

// Low-level protobuf encoder.
class ProtoWriter {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, uint32_t wire) { varint((static_cast<uint64_t>(field) << 3) | wire); }
  void int_field(uint32_t field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
  }
  void float_field(uint32_t field, float v) {
    tag(field, 5);
    raw(&v, 4);
  }
  void double_field(uint32_t field, double v) {
    tag(field, 1);
    raw(&v, 8);
  }
  void bytes_field(uint32_t field, const std::string& v) {
    tag(field, 2);
    varint(v.size());
    out_ += v;
  }
  void message_field(uint32_t field, const std::string& serialized) { bytes_field(field, serialized); }
  void packed_varints(uint32_t field, const std::vector<int64_t>& v) {
    ProtoWriter body;
    for (int64_t x : v) body.varint(static_cast<uint64_t>(x));
    bytes_field(field, body.bytes());
  }
  void packed_floats(uint32_t field, const std::vector<float>& v) {
    bytes_field(field, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  }
  void packed_doubles(uint32_t field, const std::vector<double>& v) {
    bytes_field(field, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

template <typename T>
std::string to_raw_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

struct TensorSpec {
  std::string name;
  int32_t data_type = kFloat;
  std::vector<int64_t> dims;
  bool has_raw = false;
  std::string raw_data;
  std::vector<float> float_data;
  std::vector<int64_t> int32_data;  // int32/int16/int8/uint8/bool/fp16/bf16 values (fp16/bf16 as bit patterns)
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  bool packed = true;                                              // typed fields packed (proto3) or one per value
  std::vector<std::pair<std::string, std::string>> external_data;  // {"location", "w.bin"}, {"offset", "0"}, ...
  bool external = false;                                           // data_location = EXTERNAL

  static TensorSpec raw(std::string name, int32_t type, std::vector<int64_t> dims, std::string bytes) {
    TensorSpec t;
    t.name = std::move(name);
    t.data_type = type;
    t.dims = std::move(dims);
    t.has_raw = true;
    t.raw_data = std::move(bytes);
    return t;
  }
  static TensorSpec float_raw(std::string name, std::vector<int64_t> dims, const std::vector<float>& v) {
    return raw(std::move(name), kFloat, std::move(dims), to_raw_bytes(v));
  }
  static TensorSpec float_typed(std::string name, std::vector<int64_t> dims, std::vector<float> v) {
    TensorSpec t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.float_data = std::move(v);
    return t;
  }
  static TensorSpec int64_typed(std::string name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    TensorSpec t;
    t.name = std::move(name);
    t.data_type = kInt64;
    t.dims = std::move(dims);
    t.int64_data = std::move(v);
    return t;
  }
  static TensorSpec external_file(std::string name, int32_t type, std::vector<int64_t> dims, std::string location,
                                  int64_t offset = -1, int64_t length = -1) {
    TensorSpec t;
    t.name = std::move(name);
    t.data_type = type;
    t.dims = std::move(dims);
    t.external = true;
    t.external_data.emplace_back("location", std::move(location));
    if (offset >= 0) t.external_data.emplace_back("offset", std::to_string(offset));
    if (length >= 0) t.external_data.emplace_back("length", std::to_string(length));
    return t;
  }

  std::string serialize() const {
    ProtoWriter w;
    if (!dims.empty()) w.packed_varints(1, dims);
    w.int_field(2, data_type);
    if (packed) {
      if (!float_data.empty()) w.packed_floats(4, float_data);
      if (!int32_data.empty()) w.packed_varints(5, int32_data);
      if (!int64_data.empty()) w.packed_varints(7, int64_data);
      if (!double_data.empty()) w.packed_doubles(10, double_data);
    } else {
      for (float f : float_data) w.float_field(4, f);
      for (int64_t v : int32_data) w.int_field(5, v);
      for (int64_t v : int64_data) w.int_field(7, v);
      for (double d : double_data) w.double_field(10, d);
    }
    if (!name.empty()) w.bytes_field(8, name);
    if (has_raw) w.bytes_field(9, raw_data);
    for (const auto& [k, v] : external_data) {
      ProtoWriter e;
      e.bytes_field(1, k);
      e.bytes_field(2, v);
      w.message_field(13, e.bytes());
    }
    if (external) w.int_field(14, 1);
    return w.bytes();
  }
};

// A dimension of a value's shape: a size, a symbolic name, or unknown.
struct DimSpec {
  int64_t value = -1;
  std::string param;
  DimSpec(int64_t v) : value(v) {}  // NOLINT: {1, 3, DimSpec::named("batch")} reads well
  static DimSpec named(std::string p) {
    DimSpec d(-1);
    d.param = std::move(p);
    return d;
  }
  static DimSpec unknown() { return DimSpec(-1); }
};

struct ValueInfoSpec {
  std::string name;
  int32_t elem_type = kFloat;
  bool has_type = true;
  bool has_shape = true;
  std::vector<DimSpec> shape;

  static ValueInfoSpec tensor(std::string name, int32_t type, std::vector<DimSpec> shape) {
    ValueInfoSpec v;
    v.name = std::move(name);
    v.elem_type = type;
    v.shape = std::move(shape);
    return v;
  }
  static ValueInfoSpec rank_unknown(std::string name, int32_t type) {
    ValueInfoSpec v;
    v.name = std::move(name);
    v.elem_type = type;
    v.has_shape = false;
    return v;
  }

  std::string serialize() const {
    ProtoWriter w;
    w.bytes_field(1, name);
    if (has_type) {
      ProtoWriter tensor_type;
      tensor_type.int_field(1, elem_type);
      if (has_shape) {
        ProtoWriter shp;
        for (const DimSpec& d : shape) {
          ProtoWriter dim;
          if (d.value >= 0)
            dim.int_field(1, d.value);
          else if (!d.param.empty())
            dim.bytes_field(2, d.param);
          shp.message_field(1, dim.bytes());
        }
        tensor_type.message_field(2, shp.bytes());
      }
      ProtoWriter type;
      type.message_field(1, tensor_type.bytes());
      w.message_field(2, type.bytes());
    }
    return w.bytes();
  }
};

struct GraphSpec;

// AttributeProto. `type` is ONNX's AttributeType code (FLOAT=1 INT=2 STRING=3 TENSOR=4 GRAPH=5 FLOATS=6 INTS=7
// STRINGS=8); set type = 0 to omit it.
struct AttrSpec {
  std::string name;
  int32_t type = 2;
  float f = 0.f;
  int64_t i = 0;
  std::string s;
  std::string tensor_bytes;  // serialized TensorProto
  std::string graph_bytes;   // serialized GraphProto
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::string ref_attr_name;

  static AttrSpec Int(std::string n, int64_t v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 2;
    a.i = v;
    return a;
  }
  static AttrSpec Float(std::string n, float v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 1;
    a.f = v;
    return a;
  }
  static AttrSpec String(std::string n, std::string v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 3;
    a.s = std::move(v);
    return a;
  }
  static AttrSpec Ints(std::string n, std::vector<int64_t> v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 7;
    a.ints = std::move(v);
    return a;
  }
  static AttrSpec Floats(std::string n, std::vector<float> v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 6;
    a.floats = std::move(v);
    return a;
  }
  static AttrSpec Strings(std::string n, std::vector<std::string> v) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 8;
    a.strings = std::move(v);
    return a;
  }
  static AttrSpec Tensor(std::string n, const TensorSpec& t) {
    AttrSpec a;
    a.name = std::move(n);
    a.type = 4;
    a.tensor_bytes = t.serialize();
    return a;
  }
  static AttrSpec Graph(std::string n, const GraphSpec& g);  // defined after GraphSpec

  std::string serialize() const {
    ProtoWriter w;
    w.bytes_field(1, name);
    // With type 0 ("not set", as old writers did) the non-default scalars are written, so it can be inferred.
    if (type == 1 || (type == 0 && f != 0.f)) w.float_field(2, f);
    if (type == 2 || (type == 0 && i != 0)) w.int_field(3, i);
    if (type == 3 || (type == 0 && !s.empty())) w.bytes_field(4, s);
    if (!tensor_bytes.empty() || type == 4) w.message_field(5, tensor_bytes);
    if (!graph_bytes.empty() || type == 5) w.message_field(6, graph_bytes);
    if (!floats.empty()) w.packed_floats(7, floats);
    if (!ints.empty()) w.packed_varints(8, ints);
    for (const auto& str : strings) w.bytes_field(9, str);
    if (type != 0) w.int_field(20, type);
    if (!ref_attr_name.empty()) w.bytes_field(21, ref_attr_name);
    return w.bytes();
  }
};

struct NodeSpec {
  std::string op_type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<AttrSpec> attrs = {};
  std::string name = {};
  std::string domain = {};

  std::string serialize() const {
    ProtoWriter w;
    for (const auto& in : inputs) w.bytes_field(1, in);
    for (const auto& out : outputs) w.bytes_field(2, out);
    if (!name.empty()) w.bytes_field(3, name);
    w.bytes_field(4, op_type);
    for (const auto& a : attrs) w.message_field(5, a.serialize());
    if (!domain.empty()) w.bytes_field(7, domain);
    return w.bytes();
  }
};

struct GraphSpec {
  std::string name = "test_graph";
  std::vector<NodeSpec> nodes;
  std::vector<TensorSpec> initializers;
  std::vector<ValueInfoSpec> inputs, outputs, value_infos;
  std::string extra;  // appended verbatim (e.g. a sparse_initializer field or unknown fields)

  std::string serialize() const {
    ProtoWriter w;
    for (const auto& n : nodes) w.message_field(1, n.serialize());
    w.bytes_field(2, name);
    for (const auto& t : initializers) w.message_field(5, t.serialize());
    for (const auto& v : inputs) w.message_field(11, v.serialize());
    for (const auto& v : outputs) w.message_field(12, v.serialize());
    for (const auto& v : value_infos) w.message_field(13, v.serialize());
    return w.bytes() + extra;
  }
};

inline AttrSpec AttrSpec::Graph(std::string n, const GraphSpec& g) {
  AttrSpec a;
  a.name = std::move(n);
  a.type = 5;
  a.graph_bytes = g.serialize();
  return a;
}

struct ModelSpec {
  int64_t ir_version = 8;
  std::vector<std::pair<std::string, int64_t>> opsets = {{"", 17}};
  std::string producer_name = "kilnrt-test";
  std::string producer_version = "1.0";
  bool has_graph = true;
  GraphSpec graph;

  std::string serialize() const {
    ProtoWriter w;
    w.int_field(1, ir_version);
    if (!producer_name.empty()) w.bytes_field(2, producer_name);
    if (!producer_version.empty()) w.bytes_field(3, producer_version);
    if (has_graph) w.message_field(7, graph.serialize());
    for (const auto& [domain, version] : opsets) {
      ProtoWriter o;
      o.bytes_field(1, domain);
      o.int_field(2, version);
      w.message_field(8, o.bytes());
    }
    return w.bytes();
  }
};

}  // namespace kilnrt::onnx_test
