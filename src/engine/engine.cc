// Engine loading, description and the CPU execution context.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/failure_injection.h"
#include "core/logging.h"
#include "engine/activation_memory.h"
#include "engine/api_boundary.h"
#include "engine/cuda_engine.h"
#include "engine/engine_impl.h"
#include "engine/file_bytes.h"
#include "engine/profiling.h"
#ifdef KILNRT_HAVE_CUDA
#include "cuda/foreign_checks.h"
#endif

namespace kilnrt {

namespace engine {

void validate_input_shape(const TensorInfo& info, const std::vector<std::vector<InputProfile>>& profiles,
                          const Shape& shape) {
  auto where = [&] { return "input '" + info.name + "'"; };  // built only for an error (a per-call path)
  KILNRT_CHECK(shape.size() == info.shape.size(), kInvalidArgument, where(),
               "expected rank " << info.shape.size() << " (shape " << shape_to_string(info.shape) << "), got shape "
                                << shape_to_string(shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    KILNRT_CHECK(shape[d] >= 0, kInvalidArgument, where(), "negative dimension in shape " << shape_to_string(shape));
    KILNRT_CHECK(info.shape[d] < 0 || info.shape[d] == shape[d], kInvalidArgument, where(),
                 "dimension " << d << " must be " << info.shape[d] << " (engine input shape "
                              << shape_to_string(info.shape) << "), got shape " << shape_to_string(shape));
  }
  // With profiles, the shape must fit at least one profile that names this input.
  bool named = false;
  std::string ranges;
  for (const auto& profile : profiles) {
    for (const InputProfile& r : profile) {
      if (r.name != info.name) continue;
      named = true;
      bool fits = true;
      for (size_t d = 0; d < shape.size() && d < r.min.size(); ++d)
        fits &= shape[d] >= r.min[d] && shape[d] <= r.max[d];
      if (fits) return;
      ranges += " [" + shape_to_string(r.min) + " .. " + shape_to_string(r.max) + "]";
    }
  }
  KILNRT_CHECK(!named, kInvalidArgument, where(),
               "shape " << shape_to_string(shape) << " is outside the engine's profiles:" << ranges
                        << " (rebuild with a wider --shapes range)");
}

void validate_run_inputs(const Engine& engine, const std::map<std::string, Tensor>& inputs,
                         const std::map<std::string, Shape>& set_shapes) {
  const auto& infos = engine.inputs();
  for (const auto& [name, t] : inputs) {
    bool known = false;
    std::string names;
    for (const TensorInfo& info : infos) {
      known |= info.name == name;
      names += (names.empty() ? "" : ", ") + info.name;
    }
    KILNRT_CHECK(known, kInvalidArgument, "input '" + name + "'",
                 "the engine has no input named '" << name << "' (inputs: " << names << ")");
  }
  for (const TensorInfo& info : infos) {
    const std::string where = "input '" + info.name + "'";
    auto it = inputs.find(info.name);
    KILNRT_CHECK(it != inputs.end(), kInvalidArgument, where,
                 "missing input '" << info.name << "' (the engine has " << infos.size() << " input(s))");
    KILNRT_CHECK(it->second.defined(), kInvalidArgument, where, "input tensor is empty/undefined");
    KILNRT_CHECK(reinterpret_cast<uintptr_t>(it->second.raw()) % std::max<size_t>(dtype_size(info.dtype), 1) == 0,
                 kInvalidArgument, where,
                 "input data at " << it->second.raw() << " is not aligned to " << dtype_size(info.dtype)
                                  << " bytes (the size of " << dtype_name(info.dtype) << "): pass an aligned copy");
    KILNRT_CHECK(it->second.dtype() == info.dtype, kInvalidArgument, where,
                 "expected dtype " << dtype_name(info.dtype) << ", got " << dtype_name(it->second.dtype()));
    validate_input_shape(info, engine.profiles(), it->second.shape());
    auto s = set_shapes.find(info.name);
    KILNRT_CHECK(s == set_shapes.end() || s->second == it->second.shape(), kInvalidArgument, where,
                 "shape " << shape_to_string(it->second.shape()) << " differs from the one set with set_input_shape ("
                          << shape_to_string(s->second) << ")");
  }
}

}  // namespace engine

void ExecutionContext::enqueue(const std::map<std::string, DeviceTensor>&, const std::map<std::string, DeviceTensor>&,
                               void*) {
  KILNRT_THROW(kUnsupported, "enqueue", "this engine runs on the CPU: pass host tensors to run()");
}

void ExecutionContext::set_activation_memory(void*, size_t) {
  KILNRT_THROW(kUnsupported, "set_activation_memory",
               "this engine runs on the CPU: its activations are host memory that kilnrt manages (there is no device "
               "activation memory to provide)");
}

std::map<std::string, Shape> ExecutionContext::output_shapes(const std::map<std::string, Shape>&) {
  KILNRT_THROW(kUnsupported, "output_shapes", "output_shapes() is available for CUDA engines only");
}

namespace {

class CpuExecutionContext final : public ExecutionContext {
 public:
  explicit CpuExecutionContext(std::shared_ptr<const Engine> engine) : engine_(std::move(engine)) {}

  void set_input_shape(const std::string& name, const Shape& shape) override {
    engine::validate_input_shape(find_input(name), engine_->profiles(), shape);
    shapes_[name] = shape;
  }

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    engine::validate_run_inputs(*engine_, inputs, shapes_);
    return engine_->impl().cpu_plan->run(inputs, profiling_ ? &profile_ : nullptr);
  }

  void set_profiling(bool enabled) override {
    profiling_ = enabled;
    if (enabled) profile_ = backends::cpu::CpuProfile{};
  }
  bool profiling() const override { return profiling_; }
  std::vector<LayerTiming> layer_timings() const override {
    return engine::finish_layer_timings(*engine_, profile_.layers);
  }

 private:
  const TensorInfo& find_input(const std::string& name) const {
    std::string names;
    for (const TensorInfo& info : engine_->inputs()) {
      if (info.name == name) return info;
      names += (names.empty() ? "" : ", ") + info.name;
    }
    KILNRT_THROW(kInvalidArgument, "input '" + name + "'",
                 "the engine has no input named '" << name << "' (inputs: " << names << ")");
  }

  std::shared_ptr<const Engine> engine_;
  std::map<std::string, Shape> shapes_;
  bool profiling_ = false;
  backends::cpu::CpuProfile profile_;
};

}  // namespace

Engine::Engine(std::unique_ptr<EngineImpl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

// Engine::from_bytes without the exception boundary (api_boundary.h).
static std::shared_ptr<Engine> load_engine_bytes(const void* data, size_t size, const std::string& label, int device) {
  using clock = std::chrono::steady_clock;
  const auto ms_since = [](clock::time_point t) {
    return std::chrono::duration<double, std::milli>(clock::now() - t).count();
  };
  const auto t0 = clock::now();
  engine::LoadedEngine loaded = engine::deserialize_engine(data, size, label);
  const double parse_ms = ms_since(t0);
  auto impl = std::make_unique<EngineImpl>();
  impl->graph = std::move(loaded.graph);
  impl->meta = std::move(loaded.meta);
  const bool cuda_target = impl->meta.target.rfind("sm_", 0) == 0;
  KILNRT_CHECK(impl->meta.target == "cpu" || cuda_target, kUnsupported, label,
               "engine targets '" << impl->meta.target << "', which this kilnrt does not know");
  EngineHeaderInfo& h = impl->header;
  h.format_version = impl->meta.format_version;
  h.kilnrt_version = impl->meta.kilnrt_version;
  h.target = impl->meta.target;
  h.build_options = impl->meta.build_options;
  h.model_hash = impl->meta.model_hash;
  h.gpu_name = impl->meta.gpu_name;
  h.file_size = size;
  for (const auto& [n, t] : impl->graph.constants)
    if (!loaded.device_weights.device_only.count(n)) h.weights_bytes += t.nbytes();
  h.weights_bytes += loaded.device_weights.size;  // device form (format v2)
  try {
    if (cuda_target) {
      // The GPU must have the architecture the engine was built for.
      KILNRT_CHECK(device >= 0, kInvalidArgument, label, "device ordinal " << device << " is negative");
      const engine::CudaTarget t = engine::cuda_target(device);
      KILNRT_CHECK(t.target == impl->meta.target, kUnsupported, label,
                   "engine was built for " << impl->meta.target << " (" << impl->meta.gpu_name << ") but device "
                                           << device << " is " << t.target << " (" << t.gpu_name
                                           << "): rebuild the engine on this GPU");
      const auto t1 = clock::now();
      impl->cuda_plan = engine::make_cuda_plan(impl->graph, t.device, &loaded.device_weights);
      KILNRT_LOG(kInfo, "engine load " << label << ": validate + parse " << parse_ms << " ms (" << size
                                       << " bytes), plan + device weights " << ms_since(t1) << " ms");
      impl->cuda_device = t.device;
      // Stored by the builder; engines written before it was are measured now (host only).
      auto blob = impl->meta.blobs.find(engine::kActivationMemoryBlob);
      impl->activation_bytes = blob != impl->meta.blobs.end()
                                   ? engine::decode_activation_memory(blob->second, label)
                                   : engine::cuda_activation_bytes(*impl->cuda_plan, impl->meta.inputs,
                                                                   impl->meta.outputs, impl->meta.profiles);
    } else {
      impl->cpu_plan = std::make_unique<backends::cpu::CpuPlan>(impl->graph);
    }
  } catch (const Error& e) {
    throw e.with_context(label);
  }
  return std::make_shared<Engine>(std::move(impl));
}

std::shared_ptr<Engine> Engine::from_bytes(const void* data, size_t size, const std::string& label, int device) {
  return engine::translate_exceptions("Engine::from_bytes",
                                      [&] { return load_engine_bytes(data, size, label, device); });
}

std::shared_ptr<Engine> Engine::load(const std::string& engine_path, int device) {
  return engine::translate_exceptions("Engine::load", [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const engine::FileBytes bytes(engine_path);  // mapped (file_bytes.h)
    const double read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    KILNRT_LOG(kInfo, "engine load " << engine_path << ": " << (bytes.mapped() ? "mapped " : "read ") << bytes.size()
                                     << " bytes in " << read_ms << " ms");
    return from_bytes(bytes.data(), bytes.size(), engine_path, device);
  });
}

int Engine::device() const { return impl_->cuda_plan ? impl_->cuda_device : -1; }

const std::vector<TensorInfo>& Engine::inputs() const { return impl_->meta.inputs; }
const std::vector<TensorInfo>& Engine::outputs() const { return impl_->meta.outputs; }
const EngineHeaderInfo& Engine::header() const { return impl_->header; }
const std::vector<std::vector<InputProfile>>& Engine::profiles() const { return impl_->meta.profiles; }

std::vector<LayerInfo> Engine::layers() const {
  std::map<std::string, std::string> tactic(impl_->meta.layer_tactics.begin(), impl_->meta.layer_tactics.end());
  std::map<std::string, std::string> precision;
  if (impl_->cuda_plan)
    for (const auto& [node, p] : engine::cuda_layer_precisions(*impl_->cuda_plan)) precision[node] = p;
  std::vector<LayerInfo> out;
  for (const ir::Node& n : impl_->graph.nodes) {
    LayerInfo l;
    l.name = n.name;
    l.op_type = n.op_type;
    std::string t = tactic.count(n.name) ? tactic[n.name] : "cpu:reference";
    const size_t colon = t.find(':');
    l.placement = colon == std::string::npos ? impl_->meta.target : t.substr(0, colon);
    l.tactic = colon == std::string::npos ? t : t.substr(colon + 1);
    l.inputs = n.inputs;
    l.outputs = n.outputs;
    l.precision = precision.count(n.name) ? precision[n.name] : "fp32";
    out.push_back(std::move(l));
  }
  return out;
}

std::string Engine::describe() const {
  const EngineHeaderInfo& h = header();
  std::ostringstream os;
  os << "kilnrt engine (format v" << h.format_version << ", built by kilnrt " << h.kilnrt_version << ")\n"
     << "  target: " << h.target << "\n  build options: " << h.build_options << "\n  model hash: " << h.model_hash
     << "\n  file size: " << h.file_size << " bytes, weights: " << h.weights_bytes << " bytes in "
     << impl_->graph.constants.size() << " tensors\n";
  auto print_info = [&](const char* kind, const TensorInfo& t) {
    os << "  " << kind << " " << t.name << ": " << dtype_name(t.dtype) << "[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const bool named = d < t.dim_names.size() && !t.dim_names[d].empty();
      os << (d ? "x" : "") << (t.shape[d] >= 0 ? std::to_string(t.shape[d]) : (named ? t.dim_names[d] : "?"));
    }
    os << "]\n";
  };
  for (const TensorInfo& t : inputs()) print_info("input ", t);
  for (const TensorInfo& t : outputs()) print_info("output", t);
  for (size_t p = 0; p < profiles().size(); ++p) {
    os << "  profile " << p << ":";
    for (const InputProfile& r : profiles()[p])
      os << " " << r.name << " min " << shape_to_string(r.min) << " opt " << shape_to_string(r.opt) << " max "
         << shape_to_string(r.max);
    os << "\n";
  }
  const std::vector<int64_t>& act = impl_->activation_bytes;
  for (size_t p = 0; p < act.size(); ++p) {
    os << "  activation memory at "
       << (profiles().empty() ? std::string("the input shapes") : "profile " + std::to_string(p) + " max") << ": ";
    if (act[p] < 0)
      os << "unbounded (dynamic dims without a profile)\n";
    else
      os << act[p] / (1024.0 * 1024.0) << " MiB (" << act[p] << " bytes)\n";
  }
  const auto ls = layers();
  os << "  layers: " << ls.size() << "\n";
  for (size_t i = 0; i < ls.size(); ++i)
    os << "    " << i << " " << ls[i].op_type << " '" << ls[i].name << "' [" << ls[i].placement << ":" << ls[i].tactic
       << "] " << ls[i].precision << "\n";
  return os.str();
}

std::unique_ptr<ExecutionContext> Engine::create_context() const { return create_context(ContextOptions{}); }

std::unique_ptr<ExecutionContext> Engine::create_context(const ContextOptions& options) const {
  return engine::translate_exceptions("Engine::create_context", [&] {
    std::unique_ptr<ExecutionContext> context;
    if (impl_->cuda_plan)
      context = engine::make_cuda_context(shared_from_this(), options);
    else
      context = std::make_unique<CpuExecutionContext>(shared_from_this());
    return engine::with_exception_translation(std::move(context));  // api_boundary.h
  });
}

size_t Engine::activation_memory_size() const {
  int64_t most = 0;
  for (int64_t b : impl_->activation_bytes) most = std::max(most, b);
  return static_cast<size_t>(most);
}

std::vector<int64_t> Engine::activation_memory_sizes() const { return impl_->activation_bytes; }

std::map<std::string, Tensor> Engine::run(const std::map<std::string, Tensor>& inputs) const {
  return create_context()->run(inputs);
}

void check_device_memory(const void* ptr, int device, const std::string& what) {
#ifdef KILNRT_HAVE_CUDA
  cuda::check_device_pointer(ptr, device, what);
#else
  KILNRT_THROW(kUnsupported, what, "this build of kilnrt has no CUDA support: " << what << " cannot be device memory");
#endif
}

}  // namespace kilnrt
