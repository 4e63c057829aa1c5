// Engine file format v2 (layout: docs/engine-format.md): the sections' contents. Writing is straightforward;
// reading validates the header, the section table and the checksums first (engine_file_layout.cc), and every read
// of the sections is bounds-checked.
#include "engine/engine_file.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <unordered_set>

#include "core/check.h"
#include "core/checksum.h"
#include "engine/byte_io.h"
#include "engine/engine_file_layout.h"

namespace kilnrt::engine {
using namespace file_layout;  // engine_file_layout.h
namespace {

// ---- fixed layout (header, section table, checksums: engine_file_layout.h) ---------------------------------------
constexpr uint64_t kMaxRank = 64;
constexpr int kMaxGraphDepth = 16;  // nesting of subgraph attributes

// Attribute kinds on disk (stable numbers, independent of the enum's order in ir/graph.h).
enum AttrTag : uint8_t {
  kTagFloat = 1,
  kTagInt = 2,
  kTagString = 3,
  kTagTensor = 4,
  kTagFloats = 5,
  kTagInts = 6,
  kTagStrings = 7,
  kTagGraph = 8
};

size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

// Element count of a shape, or false on a negative dim / a count above `limit`.
bool checked_numel(const Shape& dims, uint64_t limit, uint64_t* out) {
  *out = 0;
  for (int64_t d : dims)
    if (d < 0) return false;
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return true;
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (n > limit / static_cast<uint64_t>(d)) return false;
    n *= static_cast<uint64_t>(d);
  }
  *out = n;
  return true;
}

// ---- writing -----------------------------------------------------------------------------------------------
void write_dims(ByteWriter& w, const Shape& s) {
  w.u64(s.size());
  for (int64_t d : s) w.i64(d);
}

void write_sym_dims(ByteWriter& w, const ir::SymShape& s) {
  w.u64(s.size());
  for (const ir::Dim& d : s) {
    w.i64(d.value);
    w.str(d.param);
  }
}

// The type's flag byte: bit 0 has_shape, bit 1 a sequence of such tensors (files without sequences are unchanged).
constexpr uint8_t kTypeFlagSequence = 2;

void write_tensor_type(ByteWriter& w, const ir::TensorType& t) {
  w.i32(static_cast<int32_t>(t.dtype));
  w.u8((t.has_shape ? 1 : 0) | (t.is_sequence ? kTypeFlagSequence : 0));  // bit 1: a sequence (same format version)
  if (t.has_shape) write_sym_dims(w, t.shape);
  w.u8(t.sym_value ? 1 : 0);
  if (t.sym_value) write_sym_dims(w, *t.sym_value);
}

void check_writable_tensor(const Tensor& t, const std::string& what) {
  KILNRT_CHECK(t.defined() && dtype_is_valid(static_cast<int32_t>(t.dtype())), kInternal, what,
               "cannot serialize an undefined tensor or unknown dtype");
  KILNRT_CHECK(t.nbytes() == 0 || t.raw() != nullptr, kInternal, what, "tensor has no data");
}

void write_tensor_inline(ByteWriter& w, const Tensor& t, const std::string& what) {
  w.u8(t.defined() ? 1 : 0);
  if (!t.defined()) return;
  check_writable_tensor(t, what);
  w.i32(static_cast<int32_t>(t.dtype()));
  write_dims(w, t.shape());
  w.u64(t.nbytes());
  w.raw(t.raw(), t.nbytes());
}

template <typename Map>
std::vector<std::string> sorted_keys(const Map& m) {
  std::vector<std::string> keys;
  keys.reserve(m.size());
  for (const auto& kv : m) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

void write_graph(ByteWriter& w, const ir::Graph& g, int depth, bool inline_constants);

void write_attribute(ByteWriter& w, const ir::Attribute& a, const std::string& where, int depth) {
  using K = ir::Attribute::Kind;
  switch (a.kind) {
    case K::kFloat:
      w.u8(kTagFloat);
      w.f32(a.f);
      return;
    case K::kInt:
      w.u8(kTagInt);
      w.i64(a.i);
      return;
    case K::kString:
      w.u8(kTagString);
      w.str(a.s);
      return;
    case K::kTensor:
      w.u8(kTagTensor);
      write_tensor_inline(w, a.t, where);
      return;
    case K::kFloats:
      w.u8(kTagFloats);
      w.u64(a.floats.size());
      for (float f : a.floats) w.f32(f);
      return;
    case K::kInts:
      w.u8(kTagInts);
      w.u64(a.ints.size());
      for (int64_t v : a.ints) w.i64(v);
      return;
    case K::kStrings:
      w.u8(kTagStrings);
      w.u64(a.strings.size());
      for (const auto& s : a.strings) w.str(s);
      return;
    case K::kGraph:
      KILNRT_CHECK(a.g != nullptr, kInternal, where, "graph attribute without a graph");
      KILNRT_CHECK(depth + 1 < kMaxGraphDepth, kInternal, where, "subgraphs nested deeper than " << kMaxGraphDepth);
      w.u8(kTagGraph);
      write_graph(w, *a.g, depth + 1, /*inline_constants=*/true);
      return;
  }
  KILNRT_THROW(kInternal, where, "unknown attribute kind " << static_cast<int>(a.kind));
}

void write_graph(ByteWriter& w, const ir::Graph& g, int depth, bool inline_constants) {
  w.str(g.name);
  w.str(g.producer);
  w.u64(g.opsets.size());
  for (const auto& [domain, version] : g.opsets) {
    w.str(domain);
    w.i64(version);
  }
  w.u64(g.inputs.size());
  for (const auto& s : g.inputs) w.str(s);
  w.u64(g.outputs.size());
  for (const auto& s : g.outputs) w.str(s);
  const auto type_names = sorted_keys(g.types);
  w.u64(type_names.size());
  for (const auto& name : type_names) {
    w.str(name);
    write_tensor_type(w, g.types.at(name));
  }
  w.u64(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    w.str(n.name);
    w.str(n.op_type);
    w.str(n.domain);
    w.u64(n.inputs.size());
    for (const auto& s : n.inputs) w.str(s);
    w.u64(n.outputs.size());
    for (const auto& s : n.outputs) w.str(s);
    w.u64(n.attrs.size());
    for (const auto& [key, attr] : n.attrs) {
      w.str(key);
      write_attribute(w, attr, "node '" + n.name + "' attribute '" + key + "'", depth);
    }
  }
  // Subgraph constants live inline; the top-level graph's are in the weights section.
  if (!inline_constants) {
    w.u64(0);
    return;
  }
  const auto const_names = sorted_keys(g.constants);
  w.u64(const_names.size());
  for (const auto& name : const_names) {
    const Tensor& t = g.constants.at(name);
    check_writable_tensor(t, "constant '" + name + "'");
    w.str(name);
    write_tensor_inline(w, t, "constant '" + name + "'");
  }
}

void write_tensor_info(ByteWriter& w, const TensorInfo& t) {
  w.str(t.name);
  w.i32(static_cast<int32_t>(t.dtype));
  write_dims(w, t.shape);
  w.u64(t.dim_names.size());
  for (const auto& s : t.dim_names) w.str(s);
}

void write_metadata(ByteWriter& w, const EngineMetadata& m) {
  w.u32(kEngineFormatVersion);
  for (const std::string* s : {&m.kilnrt_version, &m.target, &m.gpu_name}) w.str(*s);
  w.i32(m.sm_count);
  for (const std::string* s : {&m.cuda_version, &m.cudnn_version, &m.cublaslt_version, &m.build_options, &m.model_hash})
    w.str(*s);
  w.u64(m.profiles.size());
  for (const auto& profile : m.profiles) {
    w.u64(profile.size());
    for (const InputProfile& p : profile) {
      w.str(p.name);
      write_dims(w, p.min);
      write_dims(w, p.opt);
      write_dims(w, p.max);
    }
  }
  for (const auto* list : {&m.inputs, &m.outputs}) {
    w.u64(list->size());
    for (const TensorInfo& t : *list) write_tensor_info(w, t);
  }
  w.u64(m.layer_tactics.size());
  for (const auto& [layer, tactic] : m.layer_tactics) {
    w.str(layer);
    w.str(tactic);
  }
}

void write_blobs(ByteWriter& w, const EngineMetadata& m) {
  w.u64(m.blobs.size());
  for (const auto& [name, bytes] : m.blobs) {
    w.str(name);
    w.u64(bytes.size());
    w.raw(bytes.data(), bytes.size());
  }
}

// ---- structural checks shared by writer and reader -----------------------------------------------------------
// Returns "" when the top-level graph and metadata are consistent, else what is wrong.
std::string find_structure_problem(const ir::Graph& g, const EngineMetadata& m) {
  std::unordered_set<std::string> defined;
  for (const auto& name : g.inputs) {
    if (name.empty()) return "graph input with an empty name";
    if (g.constants.count(name)) return "value '" + name + "' is both a graph input and a constant";
    if (!defined.insert(name).second) return "graph input '" + name + "' is listed twice";
  }
  for (const auto& kv : g.constants) defined.insert(kv.first);
  for (const ir::Node& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty() && !defined.count(in))
        return "node '" + n.name + "' (" + n.op_type + ") reads '" + in +
               "', which no earlier node, input or "
               "constant defines";
    for (const auto& out : n.outputs)
      if (!out.empty() && !defined.insert(out).second)
        return "node '" + n.name + "' (" + n.op_type + ") redefines value '" + out + "'";
  }
  for (const auto& out : g.outputs)
    if (!defined.count(out)) return "graph output '" + out + "' is never defined";
  const std::set<std::string> in_names(g.inputs.begin(), g.inputs.end());
  const std::set<std::string> out_names(g.outputs.begin(), g.outputs.end());
  for (const TensorInfo& t : m.inputs)
    if (!in_names.count(t.name)) return "I/O spec names input '" + t.name + "', which is not a graph input";
  for (const TensorInfo& t : m.outputs)
    if (!out_names.count(t.name)) return "I/O spec names output '" + t.name + "', which is not a graph output";
  for (size_t i = 0; i < m.profiles.size(); ++i)
    for (const InputProfile& p : m.profiles[i]) {
      if (!in_names.count(p.name))
        return "profile " + std::to_string(i) + " names '" + p.name + "', which is not a graph input";
      if (p.min.size() != p.opt.size() || p.min.size() != p.max.size())
        return "profile " + std::to_string(i) + " input '" + p.name + "': min/opt/max ranks differ";
      for (size_t d = 0; d < p.min.size(); ++d)
        if (p.min[d] < 0 || p.min[d] > p.opt[d] || p.opt[d] > p.max[d])
          return "profile " + std::to_string(i) + " input '" + p.name + "': dim " + std::to_string(d) +
                 " does not satisfy 0 <= min <= opt <= max";
    }
  return "";
}

// ---- reading -------------------------------------------------------------------------------------------------
Shape read_dims(ByteReader& r, const char* what, bool allow_unknown) {
  const uint64_t at = r.file_offset();
  const uint64_t rank = r.count(what, 8, kMaxRank);
  Shape s(static_cast<size_t>(rank));
  for (auto& d : s) {
    d = r.i64(what);
    if (d < (allow_unknown ? -1 : 0)) r.fail_at(at, std::string(what) + " has invalid dim " + std::to_string(d));
  }
  return s;
}

ir::SymShape read_sym_dims(ByteReader& r, const char* what) {
  const uint64_t rank = r.count(what, 12, kMaxRank);
  ir::SymShape s;
  s.reserve(static_cast<size_t>(rank));
  for (uint64_t i = 0; i < rank; ++i) {
    const uint64_t at = r.file_offset();
    ir::Dim d;
    d.value = r.i64(what);
    if (d.value < -1) r.fail_at(at, std::string(what) + " has invalid dim " + std::to_string(d.value));
    d.param = r.str("dim name");
    s.push_back(std::move(d));
  }
  return s;
}

DType read_dtype(ByteReader& r, const char* what, bool allow_undefined) {
  const uint64_t at = r.file_offset();
  const int32_t v = r.i32(what);
  if (v == 0 && allow_undefined) return DType::kUndefined;
  if (!dtype_is_valid(v)) r.fail_at(at, std::string(what) + ": unknown dtype " + std::to_string(v));
  return static_cast<DType>(v);
}

ir::TensorType read_tensor_type(ByteReader& r) {
  ir::TensorType t;
  t.dtype = read_dtype(r, "value dtype", /*allow_undefined=*/true);
  const uint64_t at = r.file_offset();
  const uint8_t flags = r.u8("type flags");
  if (flags > (1 | kTypeFlagSequence)) r.fail_at(at, "type flags " + std::to_string(flags) + " are invalid");
  t.has_shape = (flags & 1) != 0;
  t.is_sequence = (flags & kTypeFlagSequence) != 0;
  if (t.has_shape) t.shape = read_sym_dims(r, "value shape");
  if (r.boolean("sym_value flag")) t.sym_value = read_sym_dims(r, "sym_value");
  return t;
}

// dtype + dims + u64 byte size, validated against each other; returns the byte size.
uint64_t read_tensor_desc(ByteReader& r, const std::string& name, DType* dtype, Shape* dims) {
  const uint64_t at = r.file_offset();
  *dtype = read_dtype(r, "tensor dtype", /*allow_undefined=*/false);
  *dims = read_dims(r, "tensor dims", /*allow_unknown=*/false);
  const uint64_t nbytes = r.u64("tensor byte size");
  uint64_t numel = 0;
  const uint64_t elem = dtype_size(*dtype);
  if (!checked_numel(*dims, std::numeric_limits<uint64_t>::max() / elem, &numel) || numel * elem != nbytes)
    r.fail_at(at, "tensor '" + name + "' (" + dtype_name(*dtype) + " " + shape_to_string(*dims) + ") records " +
                      std::to_string(nbytes) + " bytes, which does not match its dtype and shape");
  return nbytes;
}

Tensor read_tensor_inline(ByteReader& r, const std::string& name) {
  if (!r.boolean("tensor defined flag")) return Tensor();
  DType dtype;
  Shape dims;
  const uint64_t nbytes = read_tensor_desc(r, name, &dtype, &dims);
  const uint8_t* data = r.bytes(nbytes, "tensor data");
  return Tensor::from_data(data, dtype, dims);
}

std::vector<std::string> read_string_list(ByteReader& r, const char* what) {
  const uint64_t n = r.count(what, 4);
  std::vector<std::string> v;
  v.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) v.push_back(r.str(what));
  return v;
}

void read_graph(ByteReader& r, ir::Graph& g, int depth);

ir::Attribute read_attribute(ByteReader& r, const std::string& where, int depth) {
  using K = ir::Attribute::Kind;
  ir::Attribute a;
  const uint64_t at = r.file_offset();
  const uint8_t tag = r.u8("attribute kind");
  switch (tag) {
    case kTagFloat:
      a.kind = K::kFloat;
      a.f = r.f32("float attribute");
      break;
    case kTagInt:
      a.kind = K::kInt;
      a.i = r.i64("int attribute");
      break;
    case kTagString:
      a.kind = K::kString;
      a.s = r.str("string attribute");
      break;
    case kTagTensor:
      a.kind = K::kTensor;
      a.t = read_tensor_inline(r, where);
      break;
    case kTagFloats:
      a.kind = K::kFloats;
      a.floats.resize(static_cast<size_t>(r.count("float list length", 4)));
      for (float& v : a.floats) v = r.f32("float list");
      break;
    case kTagInts:
      a.kind = K::kInts;
      a.ints.resize(static_cast<size_t>(r.count("int list length", 8)));
      for (int64_t& v : a.ints) v = r.i64("int list");
      break;
    case kTagStrings:
      a.kind = K::kStrings;
      a.strings = read_string_list(r, "string list");
      break;
    case kTagGraph:
      a.kind = K::kGraph;
      if (depth + 1 >= kMaxGraphDepth)
        r.fail_at(at, where + ": subgraphs nested deeper than " + std::to_string(kMaxGraphDepth));
      a.g = std::make_shared<ir::Graph>();
      read_graph(r, *a.g, depth + 1);
      break;
    default: r.fail_at(at, where + ": unknown attribute kind " + std::to_string(tag));
  }
  return a;
}

void read_graph(ByteReader& r, ir::Graph& g, int depth) {
  g.name = r.str("graph name");
  g.producer = r.str("producer");
  const uint64_t n_opsets = r.count("opset count", 12);
  for (uint64_t i = 0; i < n_opsets; ++i) {
    const uint64_t at = r.file_offset();
    std::string domain = r.str("opset domain");
    const int64_t version = r.i64("opset version");
    if (!g.opsets.emplace(domain, version).second) r.fail_at(at, "opset domain '" + domain + "' listed twice");
  }
  g.inputs = read_string_list(r, "graph input count");
  g.outputs = read_string_list(r, "graph output count");
  const uint64_t n_types = r.count("value type count", 10);
  for (uint64_t i = 0; i < n_types; ++i) {
    const uint64_t at = r.file_offset();
    std::string name = r.str("value name");
    ir::TensorType t = read_tensor_type(r);
    if (!g.types.emplace(name, std::move(t)).second) r.fail_at(at, "type of value '" + name + "' listed twice");
  }
  const uint64_t n_nodes = r.count("node count", 36);
  g.nodes.reserve(static_cast<size_t>(n_nodes));
  for (uint64_t i = 0; i < n_nodes; ++i) {
    ir::Node n;
    n.name = r.str("node name");
    n.op_type = r.str("op type");
    n.domain = r.str("node domain");
    n.inputs = read_string_list(r, "node input count");
    n.outputs = read_string_list(r, "node output count");
    const uint64_t n_attrs = r.count("attribute count", 5);
    for (uint64_t k = 0; k < n_attrs; ++k) {
      const uint64_t at = r.file_offset();
      std::string key = r.str("attribute name");
      ir::Attribute a = read_attribute(r, "node '" + n.name + "' attribute '" + key + "'", depth);
      if (!n.attrs.emplace(key, std::move(a)).second)
        r.fail_at(at, "node '" + n.name + "' has attribute '" + key + "' twice");
    }
    g.nodes.push_back(std::move(n));
  }
  const uint64_t at = r.file_offset();
  const uint64_t n_consts = r.count("inline constant count", 5);
  if (depth == 0 && n_consts != 0) r.fail_at(at, "top-level graph has inline constants (they belong in weights)");
  for (uint64_t i = 0; i < n_consts; ++i) {
    const uint64_t cat = r.file_offset();
    std::string name = r.str("constant name");
    Tensor t = read_tensor_inline(r, name);
    if (!t.defined()) r.fail_at(cat, "constant '" + name + "' is undefined");
    if (!g.constants.emplace(name, std::move(t)).second) r.fail_at(cat, "constant '" + name + "' listed twice");
  }
}

void read_weights(ByteReader& r, const ValidatedFile& f, ir::Graph& g, std::set<std::string>& device_only) {
  const SectionEntry& sec = f.section(kSecWeights);
  const uint64_t n = r.count("weight count", 33);
  struct Record {
    std::string name;
    DType dtype;
    Shape dims;
    uint64_t offset, nbytes, record_at;
    bool device_only = false;
  };
  std::vector<Record> records;
  records.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    Record rec;
    rec.record_at = r.file_offset();
    rec.name = r.str("weight name");
    rec.nbytes = read_tensor_desc(r, rec.name, &rec.dtype, &rec.dims);
    rec.offset = r.u64("weight data offset");
    const uint64_t flag_at = r.file_offset();
    rec.device_only = r.boolean("weight device-only flag");
    if (rec.device_only && rec.offset != 0)
      r.fail_at(flag_at, "device-only weight '" + rec.name + "' has a data offset");
    // Its (untouched) host tensor is allocated: bounded like everything else by the file's size.
    if (rec.device_only && rec.nbytes / 4 > f.size)
      r.fail_at(flag_at, "device-only weight '" + rec.name + "' of " + std::to_string(rec.nbytes) +
                             " bytes is far larger than the engine file");
    records.push_back(std::move(rec));
  }
  uint64_t cursor = r.file_offset();  // data follows the records, in order, without overlap
  const uint64_t section_end = sec.offset + sec.size;
  for (Record& rec : records) {
    if (g.constants.count(rec.name)) r.fail_at(rec.record_at, "weight '" + rec.name + "' listed twice");
    if (rec.device_only) {
      // No host data: the graph keeps dtype and shape (uninitialised storage, never read: device_weights.h).
      g.constants.emplace(rec.name, Tensor::empty(rec.dtype, rec.dims));
      device_only.insert(rec.name);
      continue;
    }
    if (rec.offset % kWeightAlignment != 0 || rec.offset < cursor || rec.offset > section_end ||
        rec.nbytes > section_end - rec.offset)
      r.fail_at(rec.record_at, "weight '" + rec.name + "': data at offset " + std::to_string(rec.offset) + " (" +
                                   std::to_string(rec.nbytes) +
                                   " bytes) is misaligned, out of order or outside "
                                   "the weights section");
    cursor = rec.offset + rec.nbytes;
    g.constants.emplace(rec.name, Tensor::from_data(f.p + rec.offset, rec.dtype, rec.dims));
  }
}

// Device weights section: records, then the image (256-byte aligned), which ends the section.
DeviceWeightImage read_device_weights(ByteReader& r, const ValidatedFile& f) {
  const SectionEntry& sec = f.section(kSecDeviceWeights);
  DeviceWeightImage img;
  const uint64_t n = r.count("device weight count", 36);
  img.entries.reserve(static_cast<size_t>(n));
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t at = r.file_offset();
    DeviceWeight w;
    w.key = r.str("device weight key");
    w.nbytes = read_tensor_desc(r, w.key, &w.dtype, &w.shape);
    w.offset = r.u64("device weight offset");
    if (!keys.insert(w.key).second) r.fail_at(at, "device weight '" + w.key + "' listed twice");
    img.entries.push_back(std::move(w));
  }
  const uint64_t at = r.file_offset();
  const uint64_t image_offset = r.u64("device weight image offset"), image_size = r.u64("device weight image size");
  const uint64_t end = sec.offset + sec.size;
  if (image_offset % kWeightAlignment != 0 || image_offset < r.file_offset() || image_offset > end ||
      image_size != end - image_offset)
    r.fail_at(at, "device weight image (offset " + std::to_string(image_offset) + ", " + std::to_string(image_size) +
                      " bytes) is misaligned or does not end the section");
  for (const DeviceWeight& w : img.entries)
    if (w.offset % kDeviceWeightAlignment != 0 || w.offset > image_size || w.nbytes > image_size - w.offset)
      r.fail_at(at, "device weight '" + w.key + "' (offset " + std::to_string(w.offset) + ", " +
                        std::to_string(w.nbytes) + " bytes) is misaligned or outside the image");
  img.data = f.p + image_offset;
  img.size = image_size;
  return img;
}

void read_tensor_info(ByteReader& r, TensorInfo& t) {
  t.name = r.str("I/O name");
  t.dtype = read_dtype(r, "I/O dtype", /*allow_undefined=*/true);
  t.shape = read_dims(r, "I/O shape", /*allow_unknown=*/true);
  const uint64_t at = r.file_offset();
  t.dim_names = read_string_list(r, "I/O dim name count");
  if (!t.dim_names.empty() && t.dim_names.size() != t.shape.size())
    r.fail_at(at, "I/O '" + t.name + "' has " + std::to_string(t.dim_names.size()) + " dim names for rank " +
                      std::to_string(t.shape.size()));
  // No names listed means every dim is unnamed: readers of TensorInfo get one (maybe empty) name per dim.
  t.dim_names.resize(t.shape.size());
}

EngineMetadata read_metadata(const ValidatedFile& f, const std::string& label) {
  ByteReader r = section_reader(f, kSecMetadata, label);
  EngineMetadata m;
  const uint64_t at = r.file_offset();
  m.format_version = r.u32("format version");
  if (m.format_version != f.version)
    r.fail_at(at, "metadata says format version " + std::to_string(m.format_version) + ", header says " +
                      std::to_string(f.version));
  m.kilnrt_version = r.str("kilnrt version");
  m.target = r.str("target");
  m.gpu_name = r.str("GPU name");
  const uint64_t sm_at = r.file_offset();
  m.sm_count = r.i32("SM count");
  if (m.sm_count < 0) r.fail_at(sm_at, "negative SM count " + std::to_string(m.sm_count));
  m.cuda_version = r.str("CUDA version");
  m.cudnn_version = r.str("cuDNN version");
  m.cublaslt_version = r.str("cuBLASLt version");
  m.build_options = r.str("build options");
  m.model_hash = r.str("model hash");
  const uint64_t n_profiles = r.count("profile count", 8);
  m.profiles.resize(static_cast<size_t>(n_profiles));
  for (auto& profile : m.profiles) {
    const uint64_t n_inputs = r.count("profile input count", 28);
    profile.resize(static_cast<size_t>(n_inputs));
    for (InputProfile& p : profile) {
      p.name = r.str("profile input name");
      p.min = read_dims(r, "profile min shape", false);
      p.opt = read_dims(r, "profile opt shape", false);
      p.max = read_dims(r, "profile max shape", false);
    }
  }
  for (auto* list : {&m.inputs, &m.outputs}) {
    const uint64_t n = r.count("I/O count", 24);
    list->resize(static_cast<size_t>(n));
    for (TensorInfo& t : *list) read_tensor_info(r, t);
  }
  const uint64_t n_tactics = r.count("layer tactic count", 8);
  m.layer_tactics.reserve(static_cast<size_t>(n_tactics));
  for (uint64_t i = 0; i < n_tactics; ++i) {
    std::string layer = r.str("layer name");
    m.layer_tactics.emplace_back(std::move(layer), r.str("layer tactic"));
  }
  r.expect_end();
  m.weights_bytes = f.section(kSecWeights).size;
  return m;
}

void read_blobs(const ValidatedFile& f, const std::string& label, EngineMetadata& m) {
  ByteReader r = section_reader(f, kSecBlobs, label);
  const uint64_t n = r.count("blob count", 12);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t at = r.file_offset();
    std::string name = r.str("blob name");
    const uint64_t size = r.u64("blob size");
    const uint8_t* data = r.bytes(size, "blob data");
    if (!m.blobs.emplace(name, std::vector<uint8_t>(data, data + size)).second)
      r.fail_at(at, "blob '" + name + "' listed twice");
  }
  r.expect_end();
}

}  // namespace

// ---- public entry points ---------------------------------------------------------------------------------------
std::vector<uint8_t> serialize_engine(const ir::Graph& graph, const EngineMetadata& meta,
                                      const DeviceWeightImage* device_weights) {
  const DeviceWeightImage none;
  const DeviceWeightImage& img = device_weights ? *device_weights : none;
  for (const std::string& name : img.device_only) {
    const DeviceWeight* w = img.find(name);
    KILNRT_CHECK(graph.constants.count(name) && w, kInternal, name,
                 "device-only constant '" << name << "' is not a constant with an entry in the device weight image");
  }
  const std::string problem = find_structure_problem(graph, meta);
  KILNRT_CHECK(problem.empty(), kInternal, "serialize_engine", "inconsistent graph: " << problem);

  size_t weight_bytes = static_cast<size_t>(img.size) + 2 * kWeightAlignment;
  for (const auto& kv : graph.constants) {
    check_writable_tensor(kv.second, "constant '" + kv.first + "'");
    weight_bytes += align_up(kv.second.nbytes(), kWeightAlignment) + kWeightAlignment;
  }
  ByteWriter w;
  w.reserve(weight_bytes + 64 * 1024);
  w.bytes().resize(kEngineHeaderSize + kNumSectionKinds * kSectionEntrySize, 0);

  SectionEntry entries[kNumSectionKinds];
  auto begin_section = [&](int index, uint32_t kind, size_t alignment) {
    w.pad_to(alignment);
    entries[index].kind = kind;
    entries[index].offset = w.size();
  };
  auto end_section = [&](int index) { entries[index].size = w.size() - entries[index].offset; };

  begin_section(0, kSecMetadata, 8);
  write_metadata(w, meta);
  end_section(0);

  begin_section(1, kSecGraph, 8);
  write_graph(w, graph, 0, /*inline_constants=*/false);
  end_section(1);

  begin_section(2, kSecBlobs, 8);
  write_blobs(w, meta);
  end_section(2);

  // Weights last: records (with data offsets patched in afterwards), then each tensor's data 256-byte aligned.
  begin_section(3, kSecWeights, kWeightAlignment);
  const auto names = sorted_keys(graph.constants);
  w.u64(names.size());
  std::vector<size_t> offset_slots;
  offset_slots.reserve(names.size());
  for (const auto& name : names) {
    const Tensor& t = graph.constants.at(name);
    w.str(name);
    w.i32(static_cast<int32_t>(t.dtype()));
    write_dims(w, t.shape());
    w.u64(t.nbytes());
    offset_slots.push_back(w.size());
    w.u64(0);
    w.u8(img.device_only.count(name) ? 1 : 0);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = graph.constants.at(names[i]);
    if (img.device_only.count(names[i])) continue;
    w.pad_to(kWeightAlignment);
    w.patch_u64(offset_slots[i], w.size());
    w.raw(t.raw(), t.nbytes());
  }
  end_section(3);

  begin_section(4, kSecDeviceWeights, kWeightAlignment);
  w.u64(img.entries.size());
  for (const DeviceWeight& d : img.entries) {
    KILNRT_CHECK(d.offset % kDeviceWeightAlignment == 0 && d.offset <= img.size && d.nbytes <= img.size - d.offset,
                 kInternal, d.key, "device weight '" << d.key << "' lies outside the image");
    w.str(d.key);
    w.i32(static_cast<int32_t>(d.dtype));
    write_dims(w, d.shape);
    w.u64(d.nbytes);
    w.u64(d.offset);
  }
  const size_t image_slot = w.size();
  w.u64(0);
  w.u64(img.size);
  w.pad_to(kWeightAlignment);
  w.patch_u64(image_slot, w.size());
  if (img.size > 0) w.raw(img.data, static_cast<size_t>(img.size));
  end_section(4);

  std::vector<uint8_t> out = w.take();
  uint8_t* h = out.data();
  std::copy(kEngineMagic, kEngineMagic + 8, h + kOffMagic);
  write_le32(h + kOffVersion, kEngineFormatVersion);
  write_le32(h + kOffHeaderSize, kEngineHeaderSize);
  write_le64(h + kOffFileSize, out.size());
  write_le64(h + kOffTableOffset, kEngineHeaderSize);
  write_le32(h + kOffSectionCount, kNumSectionKinds);
  for (uint32_t i = 0; i < kNumSectionKinds; ++i) {
    uint8_t* e = h + kEngineHeaderSize + i * kSectionEntrySize;
    write_le32(e, entries[i].kind);
    write_le64(e + 8, entries[i].offset);
    write_le64(e + 16, entries[i].size);
  }
  reseal_engine_checksum(out);
  return out;
}

LoadedEngine deserialize_engine(const void* data, size_t size, const std::string& label) {
  const ValidatedFile f = validate_file(data, size, label, /*whole_payload=*/true);
  LoadedEngine e;
  e.meta = read_metadata(f, label);
  read_blobs(f, label, e.meta);
  {
    ByteReader r = section_reader(f, kSecGraph, label);
    read_graph(r, e.graph, 0);
    r.expect_end();
  }
  {
    ByteReader r = section_reader(f, kSecWeights, label);
    read_weights(r, f, e.graph, e.device_weights.device_only);
  }
  {
    ByteReader r = section_reader(f, kSecDeviceWeights, label);
    std::set<std::string> device_only = std::move(e.device_weights.device_only);
    e.device_weights = read_device_weights(r, f);
    e.device_weights.device_only = std::move(device_only);
  }
  // A device-only constant exists on the GPU alone: a CUDA engine, and its image holds it (same shape; the
  // engine's storage dtype may differ from the graph's float32).
  for (const std::string& name : e.device_weights.device_only) {
    KILNRT_CHECK(e.meta.target.rfind("sm_", 0) == 0, kInvalidEngine, label,
                 "weight '" << name << "' is stored for the GPU only, but the engine targets " << e.meta.target);
    const DeviceWeight* w = e.device_weights.find(name);
    KILNRT_CHECK(w && w->shape == e.graph.constants.at(name).shape(), kInvalidEngine, label,
                 "device-only weight '" << name << "' has no entry of its shape in the device weights section");
  }
  const std::string problem = find_structure_problem(e.graph, e.meta);
  KILNRT_CHECK(problem.empty(), kInvalidEngine, label, "inconsistent engine: " << problem);
  return e;
}

EngineMetadata read_engine_header(const void* data, size_t size, const std::string& label) {
  const ValidatedFile f = validate_file(data, size, label, /*whole_payload=*/false);
  return read_metadata(f, label);
}

}  // namespace kilnrt::engine
