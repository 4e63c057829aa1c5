// `kilnrt inspect FILE [--json FILE|-]`: describes an engine file (I/O, profiles, layers, target, sizes) or an ONNX
// model (I/O, opsets, op counts, unsupported nodes). ONNX models are read with the library's importer and shape
// inference (src/ir, src/passes), as `kilnrt ops` reads the op registry.
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cli_common.h"
#include "ir/onnx_import.h"
#include "ops/op_registry.h"
#include "passes/shape_inference.h"

namespace kilnrt_cli {
namespace {

struct InspectArgs {
  std::string file;
  std::string json;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An ONNX ModelProto starts with field 1 (ir_version, varint): tag byte 0x08. Engine files start with their magic.
bool looks_like_onnx(const std::string& path) {
  if (ends_with(path, ".onnx")) return true;
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  in.get(first);
  return in && first == 0x08;
}

// A JSON shape: sizes as numbers, named dynamic dims as strings, unnamed ones null.
std::string json_dims(const kilnrt::Shape& shape, const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    out += d ? ", " : "";
    if (shape[d] >= 0)
      out += std::to_string(shape[d]);
    else
      out += d < names.size() && !names[d].empty() ? json_string(names[d]) : "null";
  }
  return out + "]";
}

std::string json_string_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

// ---- engines ----------------------------------------------------------------------------------------------------

std::string tensor_line(const char* kind, const kilnrt::TensorInfo& t) {
  return std::string("  ") + kind + " " + t.name + ": " + kilnrt::dtype_name(t.dtype) + dims_text(t.shape, t.dim_names);
}

// Engine::describe(), with each input / output line showing its dims one by one ("float32[batch, 3, 8, 8]").
std::string engine_text(const std::string& path, const kilnrt::Engine& engine) {
  std::vector<std::pair<std::string, std::string>> io;  // line prefix -> line
  for (const auto& t : engine.inputs()) io.emplace_back("  input  " + t.name + ": ", tensor_line("input ", t));
  for (const auto& t : engine.outputs()) io.emplace_back("  output " + t.name + ": ", tensor_line("output", t));
  std::istringstream in(engine.describe());
  std::ostringstream out;
  out << "engine " << path << "\n";
  size_t next = 0;
  for (std::string line; std::getline(in, line);) {
    if (next < io.size() && line.rfind(io[next].first, 0) == 0) line = io[next++].second;
    out << line << "\n";
  }
  return out.str();
}

std::string engine_json(const std::string& path, const kilnrt::Engine& engine) {
  const kilnrt::EngineHeaderInfo& h = engine.header();
  std::ostringstream js;
  auto tensors = [&](const std::vector<kilnrt::TensorInfo>& list) {
    std::string out = "[";
    for (size_t i = 0; i < list.size(); ++i)
      out += std::string(i ? ", " : "") + "{\"name\": " + json_string(list[i].name) +
             ", \"dtype\": " + json_string(kilnrt::dtype_name(list[i].dtype)) +
             ", \"shape\": " + json_dims(list[i].shape, list[i].dim_names) + "}";
    return out + "]";
  };
  js << "{\n  \"file\": " << json_string(path) << ",\n  \"kind\": \"engine\""
     << ",\n  \"format_version\": " << h.format_version << ",\n  \"built_by\": " << json_string(h.kilnrt_version)
     << ",\n  \"target\": " << json_string(h.target) << ",\n  \"gpu\": " << json_string(h.gpu_name)
     << ",\n  \"build_options\": " << json_string(h.build_options)
     << ",\n  \"model_hash\": " << json_string(h.model_hash) << ",\n  \"file_size\": " << h.file_size
     << ",\n  \"weights_bytes\": " << h.weights_bytes << ",\n  \"inputs\": " << tensors(engine.inputs())
     << ",\n  \"outputs\": " << tensors(engine.outputs()) << ",\n  \"profiles\": [";
  const auto& profiles = engine.profiles();
  for (size_t p = 0; p < profiles.size(); ++p) {
    js << (p ? ", " : "") << "[";
    for (size_t r = 0; r < profiles[p].size(); ++r) {
      const kilnrt::InputProfile& range = profiles[p][r];
      js << (r ? ", " : "") << "{\"name\": " << json_string(range.name) << ", \"min\": " << json_shape(range.min)
         << ", \"opt\": " << json_shape(range.opt) << ", \"max\": " << json_shape(range.max) << "}";
    }
    js << "]";
  }
  js << "],\n  \"activation_memory_bytes\": [";
  const auto act = engine.activation_memory_sizes();
  for (size_t i = 0; i < act.size(); ++i)
    js << (i ? ", " : "") << (act[i] < 0 ? std::string("null") : std::to_string(act[i]));
  js << "],\n  \"layers\": [";
  const auto layers = engine.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    const kilnrt::LayerInfo& l = layers[i];
    js << (i ? "," : "") << "\n    {\"name\": " << json_string(l.name) << ", \"op\": " << json_string(l.op_type)
       << ", \"placement\": " << json_string(l.placement) << ", \"tactic\": " << json_string(l.tactic)
       << ", \"precision\": " << json_string(l.precision) << ", \"inputs\": " << json_string_list(l.inputs)
       << ", \"outputs\": " << json_string_list(l.outputs) << "}";
  }
  js << (layers.empty() ? "]" : "\n  ]") << "\n}\n";
  return js.str();
}

// ---- ONNX models ------------------------------------------------------------------------------------------------

struct OnnxTensor {
  std::string name;
  std::string dtype;  // "?" when unknown
  bool has_shape = false;
  kilnrt::Shape shape;
  std::vector<std::string> names;
};

struct OnnxSummary {
  std::string producer;
  std::map<std::string, int64_t> opsets;
  size_t nodes = 0, initializers = 0, initializer_bytes = 0;
  std::vector<OnnxTensor> inputs, outputs;
  std::map<std::string, int> op_counts;
  std::vector<std::string> unsupported;
  std::string shape_inference_error;
};

OnnxSummary read_onnx(const std::string& path) {
  kilnrt::ir::Graph g = kilnrt::ir::import_onnx_file(path);
  OnnxSummary s;
  s.producer = g.producer;
  for (const auto& [domain, version] : g.opsets) s.opsets[domain.empty() ? "ai.onnx" : domain] = version;
  s.nodes = g.nodes.size();
  s.initializers = g.constants.size();
  for (const auto& [name, t] : g.constants) s.initializer_bytes += t.nbytes();
  for (const kilnrt::ir::Node& n : g.nodes) {
    ++s.op_counts[n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type];
    if (!kilnrt::ops::OpRegistry::instance().find(n.domain, n.op_type, g.opset(n.domain)))
      s.unsupported.push_back(n.describe());
  }
  try {
    kilnrt::passes::infer_shapes(g);
  } catch (const kilnrt::Error& e) {
    s.shape_inference_error = e.summary();
  }
  auto tensor = [&](const std::string& name) {
    OnnxTensor t;
    t.name = name;
    const kilnrt::ir::TensorType* type = g.type_of(name);
    t.dtype = type ? kilnrt::dtype_name(type->dtype) : "?";
    if (type && type->has_shape) {
      t.has_shape = true;
      for (const kilnrt::ir::Dim& d : type->shape) {
        t.shape.push_back(d.known() ? d.value : -1);
        t.names.push_back(d.known() ? "" : d.param);
      }
    }
    return t;
  };
  for (const std::string& i : g.inputs) s.inputs.push_back(tensor(i));
  for (const std::string& o : g.outputs) s.outputs.push_back(tensor(o));
  return s;
}

std::string onnx_text(const std::string& path, const OnnxSummary& s) {
  std::ostringstream os;
  os << "ONNX model " << path << "\n  producer: " << (s.producer.empty() ? "?" : s.producer) << "\n  opsets:";
  for (const auto& [domain, version] : s.opsets) os << " " << domain << "=" << version;
  os << "\n  nodes: " << s.nodes << ", initializers: " << s.initializers << " (" << human_bytes(s.initializer_bytes)
     << ")\n";
  if (!s.shape_inference_error.empty()) os << "  (shape inference stopped: " << s.shape_inference_error << ")\n";
  auto print = [&](const char* kind, const OnnxTensor& t) {
    os << "  " << kind << " " << t.name << ": " << t.dtype << (t.has_shape ? dims_text(t.shape, t.names) : "[?]")
       << "\n";
  };
  for (const OnnxTensor& t : s.inputs) print("input ", t);
  for (const OnnxTensor& t : s.outputs) print("output", t);
  os << "  ops:";
  bool first = true;
  for (const auto& [op, count] : s.op_counts) {
    os << (first ? " " : ", ") << op << " x " << count;
    first = false;
  }
  os << "\n  unsupported:";
  if (s.unsupported.empty()) os << " none";
  for (const std::string& n : s.unsupported) os << " " << n;
  os << "\n";
  return os.str();
}

std::string onnx_json(const std::string& path, const OnnxSummary& s) {
  std::ostringstream js;
  auto tensors = [&](const std::vector<OnnxTensor>& list) {
    std::string out = "[";
    for (size_t i = 0; i < list.size(); ++i)
      out += std::string(i ? ", " : "") + "{\"name\": " + json_string(list[i].name) +
             ", \"dtype\": " + json_string(list[i].dtype) +
             ", \"shape\": " + (list[i].has_shape ? json_dims(list[i].shape, list[i].names) : "null") + "}";
    return out + "]";
  };
  js << "{\n  \"file\": " << json_string(path)
     << ",\n  \"kind\": \"onnx\",\n  \"producer\": " << json_string(s.producer) << ",\n  \"opsets\": {";
  bool first = true;
  for (const auto& [domain, version] : s.opsets) {
    js << (first ? "" : ", ") << json_string(domain) << ": " << version;
    first = false;
  }
  js << "},\n  \"nodes\": " << s.nodes << ",\n  \"initializers\": " << s.initializers
     << ",\n  \"initializer_bytes\": " << s.initializer_bytes << ",\n  \"inputs\": " << tensors(s.inputs)
     << ",\n  \"outputs\": " << tensors(s.outputs) << ",\n  \"ops\": {";
  first = true;
  for (const auto& [op, count] : s.op_counts) {
    js << (first ? "" : ", ") << json_string(op) << ": " << count;
    first = false;
  }
  js << "},\n  \"unsupported\": " << json_string_list(s.unsupported) << ",\n  \"shape_inference_error\": "
     << (s.shape_inference_error.empty() ? std::string("null") : json_string(s.shape_inference_error)) << "\n}\n";
  return js.str();
}

void inspect(const InspectArgs& args) {
  const bool onnx = looks_like_onnx(args.file);
  require_readable_file(args.file, onnx ? "ONNX model" : "engine file");
  std::string text, json;
  if (onnx) {
    const OnnxSummary s = read_onnx(args.file);
    text = onnx_text(args.file, s);
    if (!args.json.empty()) json = onnx_json(args.file, s);
  } else {
    auto engine = kilnrt::Engine::load(args.file);
    text = engine_text(args.file, *engine);
    if (!args.json.empty()) json = engine_json(args.file, *engine);
  }
  if (args.json != "-") std::cout << text;  // `--json -`: standard output carries the JSON alone
  if (!args.json.empty()) {
    write_json(args.json, json);
    if (args.json != "-" && !global_options().quiet) std::cout << "json: " << args.json << "\n";
  }
  std::cout.flush();
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("inspect", "Describe an engine file or an ONNX model");
  auto args = std::make_shared<InspectArgs>();
  cmd->add_option("file", args->file, "Engine file or ONNX model")->required();
  cmd->add_option("--json", args->json, "Also write the description as JSON to this file ('-': standard output only)");
  cmd->callback([args]() { inspect(*args); });
}

}  // namespace kilnrt_cli
