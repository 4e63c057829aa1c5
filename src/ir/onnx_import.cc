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
#include "ir/onnx_import_detail.h"
#include "ir/protobuf_reader.h"

namespace kilnrt::ir {
namespace {

using onnx_detail::decode_tensor;
using onnx_detail::dtype_from_onnx;
using onnx_detail::ImportContext;
using onnx_detail::kOnnxLastKnown;
using onnx_detail::location;
using pb::FieldPath;
using pb::Reader;
using pb::WireType;

// ---- import state -----------------------------------------------------------------------------------------

std::string path_string(const Reader& r) { return r.path() ? r.path()->to_string() : std::string(); }

std::string normalize_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

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

std::string onnx_detail::location(const ImportContext& ctx, const pb::Reader& r) {
  const std::string p = path_string(r);
  return p.empty() ? ctx.label : ctx.label + ": " + p;
}

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
