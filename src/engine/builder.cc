// build_engine: ONNX file -> IR -> checks -> passes -> engine bytes.
#include <cerrno>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/check.h"
#include "core/checksum.h"
#include "core/failure_injection.h"
#include "core/file_io.h"
#include "core/logging.h"
#include "engine/activation_memory.h"
#include "engine/api_boundary.h"
#include "engine/cuda_engine.h"
#include "engine/engine_file.h"
#include "engine/layer_precision.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#include "ops/op_registry.h"
#include "ops/sequence/sequence_support.h"
#include "passes/optimize.h"
#include "passes/shape_inference.h"
#ifdef KILNRT_HAVE_CUDA
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_code.h"
#include "ops/nn/gemm/cuda/gemm_weight_layout.h"
#include "backends/cuda/layout_timing.h"
#endif

namespace kilnrt {

const char* version() { return KILNRT_VERSION_STRING; }

namespace {

Shape parse_dims(const std::string& text, const std::string& spec) {
  Shape dims;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    KILNRT_CHECK(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos, kInvalidArgument, spec,
                 "bad dimension '" << item << "' in shape spec (expected NAME:D0xD1x... or NAME:MIN/OPT/MAX)");
    KILNRT_CHECK(item.size() <= 18, kInvalidArgument, spec, "dimension '" << item << "' is too large");
    dims.push_back(std::stoll(item));
  }
  return dims;
}

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N.
int parse_device(const std::string& device) {
  if (device == "cpu") return -1;
  if (device == "cuda") return 0;
  const std::string digits = device.rfind("cuda:", 0) == 0 ? device.substr(5) : "";
  KILNRT_CHECK(!digits.empty() && digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos,
               kInvalidArgument, "device", "unknown device '" << device << "' (expected cpu, cuda or cuda:N)");
  return std::stoi(digits);
}

std::vector<uint8_t> read_file(const std::string& path) { return read_whole_file(path, "model file"); }

std::string options_string(const BuildOptions& o) {
  std::ostringstream os;
  os << "device=" << o.device << " fp16=" << o.fp16 << " bf16=" << o.bf16 << " tf32=" << o.tf32;
  if (o.mark_all_outputs) os << " mark_all_outputs=1";
  if (o.io16) os << " io16=1";
  for (const auto& [pattern, precision] : o.layer_precisions) os << " layer_precision:" << pattern << "=" << precision;
  for (size_t p = 0; p < o.profiles.size(); ++p)
    for (const InputProfile& r : o.profiles[p])
      os << " profile" << p << ":" << r.name << "=" << shape_to_string(r.min) << "/" << shape_to_string(r.opt) << "/"
         << shape_to_string(r.max);
  return os.str();
}

// Checks the profiles against the graph's inputs and fixes the dims that are equal in every range of every profile.
void apply_profiles(ir::Graph& g, const std::vector<std::vector<InputProfile>>& profiles) {
  for (const auto& profile : profiles) {
    for (const InputProfile& r : profile) {
      const std::string where = "input '" + r.name + "'";
      KILNRT_CHECK(std::find(g.inputs.begin(), g.inputs.end(), r.name) != g.inputs.end(), kInvalidArgument, where,
                   "the model has no input named '" << r.name << "'");
      KILNRT_CHECK(r.min.size() == r.opt.size() && r.opt.size() == r.max.size(), kInvalidArgument, where,
                   "min/opt/max shapes must have the same rank");
      ir::TensorType& t = g.types[r.name];
      KILNRT_CHECK(!t.has_shape || t.shape.size() == r.min.size(), kInvalidArgument, where,
                   "shape " << shape_to_string(r.min) << " has rank " << r.min.size() << " but the input has rank "
                            << t.shape.size() << " (" << ir::sym_shape_to_string(t.shape) << ")");
      for (size_t d = 0; d < r.min.size(); ++d) {
        KILNRT_CHECK(r.min[d] <= r.opt[d] && r.opt[d] <= r.max[d], kInvalidArgument, where,
                     "dimension " << d << " must satisfy min <= opt <= max");
        if (t.has_shape && t.shape[d].known())
          KILNRT_CHECK(r.min[d] == t.shape[d].value && r.max[d] == t.shape[d].value, kInvalidArgument, where,
                       "dimension " << d << " is fixed to " << t.shape[d].value << " by the model");
      }
    }
  }
  // Fix dims that every profile pins to one value (so that shape computations fold).
  for (const std::string& in : g.inputs) {
    ir::TensorType& t = g.types[in];
    if (!t.has_shape || profiles.empty()) continue;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d].known()) continue;
      int64_t fixed = -1;
      bool all_fixed = true;
      for (const auto& profile : profiles) {
        const InputProfile* r = nullptr;
        for (const InputProfile& x : profile)
          if (x.name == in) r = &x;
        if (!r || r->min[d] != r->max[d] || (fixed >= 0 && fixed != r->min[d])) {
          all_fixed = false;
          break;
        }
        fixed = r->min[d];
      }
      if (all_fixed && fixed >= 0) t.shape[d] = ir::Dim(fixed);
    }
  }
}

TensorInfo tensor_info(const ir::Graph& g, const std::string& name) {
  TensorInfo info;
  info.name = name;
  const ir::TensorType* t = g.type_of(name);
  KILNRT_CHECK(t && t->dtype != DType::kUndefined, kInvalidModel, name, "the type of '" << name << "' is unknown");
  info.dtype = t->dtype;
  KILNRT_CHECK(t->has_shape, kInvalidModel, name, "the rank of '" << name << "' could not be inferred");
  for (const ir::Dim& d : t->shape) {
    info.shape.push_back(d.known() ? d.value : -1);
    info.dim_names.push_back(d.known() ? "" : d.param);
  }
  return info;
}

}  // namespace

InputProfile parse_shape_spec(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  KILNRT_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < spec.size(), kInvalidArgument, spec,
               "bad shape spec: expected NAME:D0xD1x... or NAME:MIN/OPT/MAX");
  InputProfile p;
  p.name = spec.substr(0, colon);
  std::vector<Shape> parts;
  std::stringstream ss(spec.substr(colon + 1));
  std::string part;
  while (std::getline(ss, part, '/')) parts.push_back(parse_dims(part, spec));
  KILNRT_CHECK(parts.size() == 1 || parts.size() == 3, kInvalidArgument, spec,
               "bad shape spec: give one shape or three (MIN/OPT/MAX)");
  p.min = parts[0];
  p.opt = parts.size() == 3 ? parts[1] : parts[0];
  p.max = parts.size() == 3 ? parts[2] : parts[0];
  return p;
}

// build_engine without the exception boundary (api_boundary.h).
static std::vector<uint8_t> build_engine_bytes(const std::string& onnx_path, const BuildOptions& options) {
  const int cuda_device = parse_device(options.device);
  const bool cuda = cuda_device >= 0;
  // A CUDA engine is built on (and for) the GPU that will run it: fail early and clearly without one.
  engine::CudaTarget target;
  if (cuda) target = engine::cuda_target(cuda_device);
  KILNRT_CHECK(!(options.fp16 && options.bf16), kInvalidArgument, "precision", "choose one of fp16 and bf16");
  KILNRT_CHECK(!options.io16 || (cuda && (options.fp16 || options.bf16)), kInvalidArgument, "io16",
               "16-bit inputs and outputs need a CUDA engine built with fp16 or bf16");
  if (!cuda && (options.fp16 || options.bf16))
    KILNRT_LOG(kWarning, "the CPU backend computes in float32: --fp16/--bf16 apply to CUDA engines only");

  const std::vector<uint8_t> onnx_bytes = read_file(onnx_path);
  const std::string dir = onnx_path.find('/') == std::string::npos ? "." : onnx_path.substr(0, onnx_path.rfind('/'));
  ir::Graph graph = ir::import_onnx_bytes(onnx_bytes.data(), onnx_bytes.size(), dir, onnx_path);

  // Every op must be supported before anything else: the error names the first unsupported node.
  for (const ir::Node& n : graph.nodes) ops::OpRegistry::instance().get(n, graph.opset(n.domain));

  apply_profiles(graph, options.profiles);
  // Debug outputs are marked before the passes, so that they keep the model's names and no fusion hides them.
  const std::vector<std::string> marked =
      options.mark_all_outputs ? engine::mark_all_outputs(graph) : std::vector<std::string>{};
  passes::OptimizeOptions passes_options;
  passes_options.fuse_attention = !cuda || options.fp16 || options.bf16;  // float32 CUDA: MatMul + Softmax is faster
#ifdef KILNRT_HAVE_CUDA
  passes_options.fuse_pointwise = cuda && backends::cuda::fused_pointwise_available();  // NVRTC kernels
#endif
  passes::optimize_graph(graph, passes_options);
  if (options.mark_all_outputs) engine::prune_marked_outputs(graph, marked);
  // Precision is an attribute of the plan, stored per layer (the CPU oracle ignores it).
  engine::assign_layer_precisions(graph, options, cuda);

  engine::EngineMetadata meta;
  meta.format_version = engine::kEngineFormatVersion;
  meta.kilnrt_version = version();
  meta.target = cuda ? target.target : "cpu";
  meta.build_options = options_string(options);
  meta.model_hash = hash64_hex(onnx_bytes.data(), onnx_bytes.size());
  meta.profiles = options.profiles;
  for (const std::string& in : graph.inputs) meta.inputs.push_back(tensor_info(graph, in));
  for (const std::string& out : graph.outputs) meta.outputs.push_back(tensor_info(graph, out));
  if (cuda) {
    ops::check_cuda_sequences(graph);  // main-graph sequence ops only (backends/cuda/control_flow/sequence_steps.h)
#ifdef KILNRT_HAVE_CUDA
    backends::cuda::embed_fused_pointwise_code(graph, target.device);  // NVRTC now: loading the engine skips it
#endif
    // Planning on the target GPU checks every node (an unsupported one is an error naming it) and picks tactics.
    std::map<std::string, std::string> timed;  // tactics timed on this GPU (ops/cuda/tactic_timing.h)
#ifdef KILNRT_HAVE_CUDA
    // FusedMatMul weights stored [K, N] or [N, K], whichever cuBLASLt runs faster here (gemm_weight_layout.h).
    KILNRT_LOG(kInfo, backends::cuda::choose_gemm_weight_layouts(graph, target.device).note);
    // NCHW or NHWC storage: both whole plans timed on this GPU, the faster recorded with the convs (layout_timing.h).
    const std::string layout_note = backends::cuda::choose_layout_by_timing(graph, target.device, &timed).note;
    KILNRT_LOG(kInfo, layout_note);
#endif
    auto plan = engine::make_cuda_plan(graph, target.device, nullptr, /*record=*/true, &timed);
    // Stored with the node: loading reads the choice and never times. Keys are node names (kilnrt_conv_tactic) or
    // "node<TAB>attribute" (other layers: kilnrt_gemm_algo, ops/nn/gemm/cuda/gemm_tactics.h).
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_node;
    for (const auto& [key, value] : timed) {
      const size_t tab = key.find('\t');
      if (tab == std::string::npos)
        by_node[key].emplace_back("kilnrt_conv_tactic", value);
      else
        by_node[key.substr(0, tab)].emplace_back(key.substr(tab + 1), value);
    }
    for (ir::Node& n : graph.nodes) {
      auto it = by_node.find(n.name);
      if (it == by_node.end()) continue;
      for (const auto& [attr, value] : it->second) {
        ir::Attribute& a = n.attrs[attr];
        a.kind = ir::Attribute::Kind::kString;
        a.s = value;
      }
    }
    if (options.io16) {  // float32 model I/O bound in the engine's 16-bit storage (runner: set_io_dtypes)
      const int sync_points = engine::cuda_sync_points(*plan);
      KILNRT_CHECK(sync_points == 0, kUnsupported, "io16",
                   "16-bit inputs and outputs are not available for engines with data-dependent shapes ("
                       << sync_points << " sync points)");
      const DType a16 = options.bf16 ? DType::kBFloat16 : DType::kFloat16;
      for (auto* infos : {&meta.inputs, &meta.outputs})
        for (TensorInfo& t : *infos)
          if (t.dtype == DType::kFloat32) t.dtype = a16;
    }
    meta.layer_tactics = engine::cuda_tactics(*plan);
    // Activation memory at each profile's max shapes (host-only layout, the one contexts use).
    meta.blobs[engine::kActivationMemoryBlob] = engine::encode_activation_memory(
        engine::cuda_activation_bytes(*plan, meta.inputs, meta.outputs, meta.profiles));
    meta.gpu_name = target.gpu_name;
    meta.sm_count = target.sm_count;
    meta.cuda_version = engine::cuda_library_version(0);
    meta.cudnn_version = engine::cuda_library_version(1);
    meta.cublaslt_version = engine::cuda_library_version(2);
    // Format v2: the weights in the form the plan uploads them (16-bit, NHWC copies ...), loaded in one copy.
    const engine::DeviceWeightImage image = engine::cuda_device_weights(*plan);
    return engine::serialize_engine(graph, meta, &image);
  }
  for (const ir::Node& n : graph.nodes) meta.layer_tactics.emplace_back(n.name, "cpu:reference");
  return engine::serialize_engine(graph, meta);
}

std::vector<uint8_t> build_engine(const std::string& onnx_path, const BuildOptions& options) {
  return engine::translate_exceptions("build_engine", [&] { return build_engine_bytes(onnx_path, options); });
}

void build_engine_file(const std::string& onnx_path, const std::string& engine_path, const BuildOptions& options) {
  engine::translate_exceptions("build_engine_file", [&] {
    std::vector<uint8_t> bytes = build_engine(onnx_path, options);
    errno = 0;
    std::ofstream f(engine_path, std::ios::binary);
    if (!f.good()) throw_file_error("cannot write", engine_path, errno);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (f.fail()) throw_file_error("cannot write", engine_path, errno);
  });
}

std::string describe_onnx_model(const std::string& onnx_path) {
  ir::Graph g = ir::import_onnx_file(onnx_path);
  std::ostringstream os;
  os << "ONNX model " << onnx_path << "\n  producer: " << (g.producer.empty() ? "?" : g.producer) << "\n  opsets:";
  for (const auto& [d, v] : g.opsets) os << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  size_t weight_bytes = 0;
  for (const auto& [n, t] : g.constants) weight_bytes += t.nbytes();
  os << "\n  nodes: " << g.nodes.size() << ", initializers: " << g.constants.size() << " (" << weight_bytes
     << " bytes)\n";
  std::string unsupported;
  for (const ir::Node& n : g.nodes)
    if (!ops::OpRegistry::instance().find(n.domain, n.op_type, g.opset(n.domain))) unsupported += " " + n.describe();
  try {
    passes::infer_shapes(g);
  } catch (const Error& e) {
    os << "  (shape inference stopped: " << e.what() << ")\n";
  }
  auto print = [&](const char* kind, const std::string& name) {
    const ir::TensorType* t = g.type_of(name);
    os << "  " << kind << " " << name << ": "
       << (t ? std::string(dtype_name(t->dtype)) + "[" + (t->has_shape ? ir::sym_shape_to_string(t->shape) : "?") + "]"
             : "?")
       << "\n";
  };
  for (const std::string& i : g.inputs) print("input ", i);
  for (const std::string& o : g.outputs) print("output", o);
  std::map<std::string, int> counts;
  for (const ir::Node& n : g.nodes) counts[n.op_type]++;
  os << "  ops:";
  for (const auto& [op, c] : counts) os << " " << op << "x" << c;
  os << "\n  unsupported:" << (unsupported.empty() ? " none" : unsupported) << "\n";
  return os.str();
}

}  // namespace kilnrt
