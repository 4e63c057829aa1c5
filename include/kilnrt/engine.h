// Building an engine from ONNX and running it.
//   kilnrt::BuildOptions opt; opt.device = "cpu";
//   kilnrt::build_engine_file("model.onnx", "model.engine", opt);
//   auto engine = kilnrt::Engine::load("model.engine");
//   auto ctx = engine->create_context();
//   auto outputs = ctx->run({{"x", input}});
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kilnrt/error.h"
#include "kilnrt/tensor.h"

namespace kilnrt {

const char* version();  // "0.1.0"

// Min/opt/max shape of one input for a dynamic-shape profile.
struct InputProfile {
  std::string name;
  Shape min, opt, max;
};

struct BuildOptions {
  std::string device = "cpu";  // "cpu", "cuda" (GPU 0) or "cuda:N" (GPU N builds and times for itself)
  bool fp16 = false;
  bool bf16 = false;
  bool tf32 = false;
  // Profiles: each is a list of input ranges. Inputs with symbolic dims that no profile names keep them dynamic
  // (any size at run time on the CPU backend). A range with min == opt == max fixes the shape.
  std::vector<std::vector<InputProfile>> profiles;
  // Per-layer precision overrides, applied in order (a later pattern wins where two match): {PATTERN, PRECISION}
  // with PRECISION "fp32", "fp16" or "bf16". PATTERN matches a layer (node) name or op type of the optimized graph,
  // '*' matching any run of characters ("Softmax", "*attn*", "/encoder/layer.0/*"). "fp32" in an --fp16 / --bf16
  // engine makes a float32 island; in a --tf32 engine strict float32. A 16-bit precision needs the engine's own
  // 16-bit type (--fp16 / --bf16): elsewhere it is a build error saying so. A pattern matching no layer is an error.
  std::vector<std::pair<std::string, std::string>> layer_precisions;
  // Debug: every intermediate tensor computed from the inputs' data (not constants or shape computations) becomes
  // an engine output, named as in the model, after the model's own outputs — to compare engines layer by layer
  // (scripts/accuracy_hunt.py). Marking happens before the graph passes, so fusions that would hide a marked
  // tensor do not happen: the engine may be slower than one built without it.
  bool mark_all_outputs = false;
  // 16-bit inputs and outputs (CUDA engines built with fp16 or bf16): the model's float32 inputs and outputs are
  // bound in the engine's 16-bit type (Engine::inputs() / outputs() report it), read and written in place: no
  // conversion kernels at the start and end of a run, and torch / cupy float16 tensors go in and out as they are.
  // Engines with data-dependent shapes (sync points) refuse it.
  bool io16 = false;
};

// Parses "NAME:1x3x224x224" (fixed) or "NAME:1x3x224x224/8x3x224x224/32x3x224x224" (min/opt/max).
InputProfile parse_shape_spec(const std::string& spec);

// Builds an engine from an ONNX file (external-data weights are read relative to it).
std::vector<uint8_t> build_engine(const std::string& onnx_path, const BuildOptions& options = {});
void build_engine_file(const std::string& onnx_path, const std::string& engine_path, const BuildOptions& options = {});

struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;                         // -1 for dynamic dims
  std::vector<std::string> dim_names;  // symbolic names ("batch"), "" for fixed or unnamed dims
};

struct LayerInfo {
  std::string name;
  std::string op_type;
  std::string placement;  // "cpu" / "cuda"
  std::string tactic;     // kernel chosen
  std::vector<std::string> inputs, outputs;
  // What the layer computes in: "fp32", "tf32", "fp16", "bf16" (CUDA: the effective choice, a 16-bit engine's
  // float32 island says "fp32"), "host" (CUDA shape computations evaluated on the host). CPU engines: "fp32".
  std::string precision;
};

// Options of Engine::create_context.
struct ContextOptions {
  // false: the context allocates no activation memory; give it with ExecutionContext::set_activation_memory()
  // (at least Engine::activation_memory_size() bytes) before the first run() / enqueue().
  bool allocate_activations = true;
};

struct EngineHeaderInfo {
  uint32_t format_version = 0;
  std::string kilnrt_version;
  std::string target;         // "cpu" or "sm_90" ...
  std::string build_options;  // "device=cpu fp16=0 ..."
  std::string model_hash;     // hex
  uint64_t file_size = 0;
  uint64_t weights_bytes = 0;
  std::string gpu_name;  // CUDA engines: the GPU the engine was built on ("" for CPU engines)
};

class ExecutionContext;
struct EngineImpl;

// Immutable once loaded; share it across threads. Create one ExecutionContext per thread / stream.
class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // `device`: the CUDA device ordinal a CUDA engine runs on (ignored for CPU engines). It must have the compute
  // capability the engine was built for.
  static std::shared_ptr<Engine> load(const std::string& engine_path, int device = 0);
  static std::shared_ptr<Engine> from_bytes(const void* data, size_t size, const std::string& label = "<memory>",
                                            int device = 0);
  // The CUDA device ordinal the engine runs on, or -1 for a CPU engine.
  int device() const;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  std::vector<LayerInfo> layers() const;
  const EngineHeaderInfo& header() const;
  const std::vector<std::vector<InputProfile>>& profiles() const;
  // Human-readable summary (what `kilnrt inspect` prints).
  std::string describe() const;

  std::unique_ptr<ExecutionContext> create_context() const;
  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options) const;
  // Device memory (bytes) an execution context needs for activations at the max shapes of the engine's profiles
  // (the largest over the profiles; a fixed-shape engine: its shapes), computed at build time and stored in the
  // engine. Contexts allocate this much at creation, so shapes within the profiles never make them allocate later.
  // It excludes the context's library workspace and the small per-shape uploads of shape computations. 0 for CPU
  // engines, and for CUDA engines with dynamic dims that no profile bounds (their contexts grow as needed).
  size_t activation_memory_size() const;
  // Per profile (one entry for a fixed-shape engine without profiles); -1 where no bound is known. Empty for CPU.
  std::vector<int64_t> activation_memory_sizes() const;
  // Convenience: runs on a context private to the call.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;

  ~Engine();
  explicit Engine(std::unique_ptr<EngineImpl> impl);
  const EngineImpl& impl() const { return *impl_; }

 private:
  std::unique_ptr<EngineImpl> impl_;
};

// A tensor in device memory the caller owns (for ExecutionContext::enqueue): contiguous, row-major.
struct DeviceTensor {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  Shape shape;
  int device = 0;  // CUDA device ordinal the memory belongs to
};

// Per-layer timings of an execution context with profiling on (ExecutionContext::layer_timings()).
struct LayerTiming {
  std::string name;     // layer (node) name
  std::string op_type;  // ONNX op type
  std::string tactic;   // kernel chosen ("cpu:reference", "cuda:cudnn..." as `inspect` shows it)
  uint64_t calls = 0;   // profiled runs that executed the layer
  double total_ms = 0.0, mean_ms = 0.0;
  // Per call, for traces: start offset (ms) from the first profiled run's start, and duration (ms). CUDA: measured
  // with CUDA events on the GPU timeline of the stream; CPU: steady_clock on the host.
  std::vector<double> start_ms, duration_ms;
};

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;
  // Checks `shape` against the input's declared shape and profile; throws kInvalidArgument naming the input.
  virtual void set_input_shape(const std::string& name, const Shape& shape) = 0;
  // Runs synchronously on host tensors. Inputs must be named exactly as engine inputs, with matching dtype.
  virtual std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
  // CUDA engines: enqueues the engine on the caller's `stream` (a cudaStream_t / CUstream of the engine's device;
  // nullptr = the legacy default stream) with inputs and outputs in device memory of the engine's device. Returns
  // without waiting for the GPU. Output tensors must have the shapes output_shapes() reports for these inputs.
  // CPU engines throw kUnsupported (use run()).
  virtual void enqueue(const std::map<std::string, DeviceTensor>& inputs,
                       const std::map<std::string, DeviceTensor>& outputs, void* stream);
  // The output shapes for the given input shapes (CUDA engines; CPU engines throw kUnsupported).
  virtual std::map<std::string, Shape> output_shapes(const std::map<std::string, Shape>& input_shapes);
  // CUDA engines: whether run() / enqueue() replay CUDA graphs captured per input-shape tuple (on by default;
  // KILNRT_CUDA_GRAPHS=0 in the environment turns them off for new contexts). CPU engines ignore it.
  virtual void set_cuda_graphs(bool enabled) { (void)enabled; }
  // How the last run() / enqueue() executed on a CUDA engine: "direct" (layers launched one by one: first call of a
  // shape tuple, or graphs off), "graph-capture", "graph-replay", "caller-capture" (the caller's stream was
  // capturing: layers enqueued into its graph); "" before the first call and for CPU engines.
  virtual std::string last_execution_mode() const { return ""; }
  // CUDA engines: the caller's device memory becomes the context's activation memory (contexts created with
  // ContextOptions{false}; on others it replaces the memory they allocated). `device_ptr`: device memory of the
  // engine's device, 256-byte aligned, at least Engine::activation_memory_size() bytes (and, for shapes outside
  // the profiles' bound, what they need: checked at each run). The caller keeps it alive and unused by others
  // while work of this context may run; changing it waits for the context's earlier work. Throws
  // kInvalidArgument saying what is wrong. CPU engines throw kUnsupported.
  virtual void set_activation_memory(void* device_ptr, size_t bytes);
  // Per-layer profiling (off by default; zero cost when off). CUDA engines: a pair of timing events per layer,
  // recorded around each launch; while on, the context launches layers directly (no CUDA graphs). CPU engines:
  // steady_clock around each node. Turning it on (again) clears earlier timings.
  virtual void set_profiling(bool enabled) { (void)enabled; }
  virtual bool profiling() const { return false; }
  // Timings accumulated since profiling was turned on, one entry per executed layer in execution order. CUDA
  // engines wait for the recorded events only (no device or stream synchronisation).
  virtual std::vector<LayerTiming> layer_timings() const { return {}; }
  // Device memory the context holds (activation arena, workspace, per-shape uploads) in bytes; 0 for CPU engines.
  virtual size_t device_memory_bytes() const { return 0; }
};

// Checks that `ptr` is memory an engine on CUDA device `device` can read and write in place: device (or managed)
// memory of that device, allocated in its primary context or by a context-less allocator (cudaMallocAsync pools,
// VMM / expandable segments) — not host memory, another device's memory or memory of a user-created context
// (pycuda's make_context). Throws kInvalidArgument naming `what` ("input 'x'") and saying what to do; kCuda without
// a usable GPU; kUnsupported in builds without CUDA. Runs under the context guard (the caller's context is kept).
void check_device_memory(const void* ptr, int device, const std::string& what);

// Inspecting an ONNX model without building it (for `kilnrt inspect model.onnx`).
std::string describe_onnx_model(const std::string& onnx_path);

}  // namespace kilnrt
