// The CUDA execution context and the engine <-> CUDA backend glue. Every public entry that touches the GPU runs
// under ContextGuard, so the caller's current context and context stack are unchanged afterwards.
#include "engine/cuda_engine.h"

#include "core/check.h"

#ifdef KILNRT_HAVE_CUDA
#include <cstring>
#include <mutex>

#include "ops/cuda/tactic_timing.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda/arch_coverage.h"
#include "cuda/capture_safety.h"
#include "cuda/context_guard.h"
#include "cuda/buffer_checks.h"
#include "cuda/foreign_checks.h"
#include "cuda/library_loader.h"
#include "engine/activation_memory.h"
#include "engine/engine_impl.h"
#include "engine/profiling.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#endif

namespace kilnrt::engine {

#ifndef KILNRT_HAVE_CUDA

namespace {
[[noreturn]] void no_cuda() {
  KILNRT_THROW(kUnsupported, "device", "this build of kilnrt has no CUDA backend (built without the CUDA toolkit)");
}
}  // namespace
CudaTarget cuda_target(int) { no_cuda(); }
std::shared_ptr<backends::cuda::CudaPlan> make_cuda_plan(const ir::Graph&, int, const DeviceWeightImage*, bool,
                                                         std::map<std::string, std::string>*) {
  no_cuda();
}
DeviceWeightImage cuda_device_weights(backends::cuda::CudaPlan&) { no_cuda(); }
std::vector<std::pair<std::string, std::string>> cuda_tactics(const backends::cuda::CudaPlan&) { no_cuda(); }
std::string cuda_library_version(int) { return ""; }
std::unique_ptr<ExecutionContext> make_cuda_context(std::shared_ptr<const Engine>, const ContextOptions&) { no_cuda(); }
std::vector<int64_t> cuda_activation_bytes(const backends::cuda::CudaPlan&, const std::vector<TensorInfo>&,
                                           const std::vector<TensorInfo>&,
                                           const std::vector<std::vector<InputProfile>>&) {
  no_cuda();
}
std::vector<std::pair<std::string, std::string>> cuda_layer_precisions(const backends::cuda::CudaPlan&) { no_cuda(); }
int cuda_sync_points(const backends::cuda::CudaPlan&) { no_cuda(); }

#else

namespace kc = kilnrt::cuda;
using backends::cuda::CudaPlan;
using backends::cuda::CudaRunner;

CudaTarget cuda_target(int device) {
  std::string why;
  KILNRT_CHECK(cuda_available(&why), kCuda, "device", "no usable CUDA GPU: " << why);
  const kc::DriverApi& api = kc::driver_api();
  KILNRT_CHECK(device >= 0 && device < kc::device_count(), kInvalidArgument, "device",
               "no CUDA device " << device << " (" << kc::device_count() << " visible)");
  CUdevice dev = 0;
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), "cuda_target");
  int major = 0, minor = 0, sms = 0;
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                  "cuda_target");
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                  "cuda_target");
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuda_target");
  char name[256] = {};
  KILNRT_CU_CHECK(api, api.DeviceGetName(name, sizeof(name) - 1, dev), "cuda_target");
  // Every engine build and load targets this GPU: this build's own kernels must run on it. Refuse now, naming the GPU
  // and the rebuild, rather than fail at the first kernel launch with "no kernel image is available".
  const std::string not_covered = kc::arch_coverage_message(device, name, major, minor, kc::cuda_archs_built());
  KILNRT_CHECK(not_covered.empty(), kUnsupported, "device", not_covered);
  CudaTarget t;
  t.device = device;
  t.target = "sm_" + std::to_string(major * 10 + minor);
  t.gpu_name = name;
  t.sm_count = sms;
  return t;
}

static std::vector<DType> io_dtypes(const std::vector<TensorInfo>& infos) {
  std::vector<DType> d;
  for (const TensorInfo& t : infos) d.push_back(t.dtype);
  return d;
}

std::shared_ptr<CudaPlan> make_cuda_plan(const ir::Graph& graph, int device, const DeviceWeightImage* image,
                                         bool record, std::map<std::string, std::string>* timed) {
  CudaPlan::check_supported(graph);  // clear per-node errors before touching the GPU
  kc::ContextGuard guard(device);
  std::unique_ptr<backends::cuda::TacticTimingScope> tuning;
  if (timed) tuning = std::make_unique<backends::cuda::TacticTimingScope>(device, timed);
  return std::make_shared<CudaPlan>(graph, device, image, record);
}

DeviceWeightImage cuda_device_weights(CudaPlan& plan) { return plan.device_weight_image(); }

std::vector<std::pair<std::string, std::string>> cuda_tactics(const CudaPlan& plan) { return plan.tactics(); }

std::vector<std::pair<std::string, std::string>> cuda_layer_precisions(const CudaPlan& plan) {
  return plan.precisions();
}

int cuda_sync_points(const CudaPlan& plan) { return plan.sync_points(); }

std::vector<int64_t> cuda_activation_bytes(const CudaPlan& plan, const std::vector<TensorInfo>& inputs,
                                           const std::vector<TensorInfo>& outputs,
                                           const std::vector<std::vector<InputProfile>>& profiles) {
  const MaxShapes max = profile_max_shapes(inputs, profiles);
  CudaRunner runner(plan);  // allocates nothing: arena_bytes_for() is host-only
  runner.set_io_dtypes(io_dtypes(inputs), io_dtypes(outputs));
  std::vector<int64_t> out;
  for (size_t p = 0; p < max.shapes.size(); ++p) {
    if (!max.bounded[p]) {
      out.push_back(-1);
      continue;
    }
    try {
      out.push_back(static_cast<int64_t>(runner.arena_bytes_for(max.shapes[p])));
    } catch (const Error& e) {
      throw e.with_context(profiles.empty() ? std::string("activation memory of the input shapes")
                                            : "activation memory at profile " + std::to_string(p) + "'s max shapes");
    }
  }
  return out;
}

std::string cuda_library_version(int which) {
  if (which == 0) return std::to_string(CUDART_VERSION);
  const kc::LibraryInfo& info = kc::library(which == 1 ? kc::Library::kCudnn : kc::Library::kCublasLt);
  return info.found ? info.version_string : "";
}

namespace {

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

class CudaExecutionContext final : public ExecutionContext {
 public:
  CudaExecutionContext(std::shared_ptr<const Engine> engine, const ContextOptions& options)
      : engine_(std::move(engine)), plan_(*engine_->impl().cuda_plan), device_(plan_.device()) {
    runner_ = std::make_unique<CudaRunner>(plan_);
    runner_->set_io_dtypes(io_dtypes(engine_->inputs()), io_dtypes(engine_->outputs()));  // io16 engines
    // The activation arena for the profiles' max shapes, allocated now in relaxed capture mode (a context may be
    // created while the caller's stream captures a CUDA graph): shapes within the profiles never grow it later.
    // Without allocate_activations the caller's memory comes with set_activation_memory().
    if (!options.allocate_activations)
      runner_->set_external_arena(nullptr, 0);
    else
      runner_->reserve_arena(engine_->activation_memory_size());
  }

  ~CudaExecutionContext() override {
    // Work queued by run() is complete (run synchronises); enqueue()d work is the caller's to wait for before
    // destroying the context. The runner's buffers are freed under the guard by their destructors.
  }

  void set_input_shape(const std::string& name, const Shape& shape) override {
    validate_input_shape(find_input(name), engine_->profiles(), shape);
    shapes_[name] = shape;
  }

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    validate_run_inputs(*engine_, inputs, shapes_);
    const auto& in_infos = engine_->inputs();
    const auto& out_infos = engine_->outputs();
    std::vector<Shape> shapes;
    for (const TensorInfo& info : in_infos) shapes.push_back(inputs.at(info.name).shape());
    std::lock_guard<std::mutex> lock(mutex_);
    kc::ContextGuard guard(device_);
    const kc::DriverApi& api = guard.api();
    kc::StreamHandle s = own_stream();
    runner_->prepare(shapes, s);
    check_activation_memory();
    std::vector<Shape> out_shapes = runner_->output_shapes();
    size_t total = 0;
    for (const TensorInfo& info : in_infos) total += align(inputs.at(info.name).nbytes());
    std::vector<size_t> out_bytes;
    for (size_t i = 0; i < out_infos.size(); ++i) {
      out_bytes.push_back(shape_numel(out_shapes[i]) * dtype_size(out_infos[i].dtype));
      total += align(out_bytes.back());
    }
    if (staging_.size() < total) staging_ = kc::PinnedBuffer(device_, total);
    char* pinned = static_cast<char*>(staging_.data());
    size_t off = 0;
    for (size_t i = 0; i < in_infos.size(); ++i) {
      const Tensor& t = inputs.at(in_infos[i].name);
      if (t.nbytes() > 0) {
        std::memcpy(pinned + off, t.raw(), t.nbytes());
        KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(runner_->input_device_ptr(i)), pinned + off, t.nbytes(), s),
                        "input '" + in_infos[i].name + "'");
      }
      off += align(t.nbytes());
    }
    runner_->enqueue(std::vector<const void*>(in_infos.size(), nullptr), std::vector<void*>(out_infos.size(), nullptr),
                     s);
    if (runner_->data_dependent()) {
      // Data-dependent shapes: the outputs are sized by the run itself, which synchronised the stream at
      // its sync points; the staging grows after the stream's work (the input copies) is done.
      out_shapes = runner_->output_shapes();
      size_t need = off;
      for (size_t i = 0; i < out_infos.size(); ++i) {
        out_bytes[i] = shape_numel(out_shapes[i]) * dtype_size(out_infos[i].dtype);
        need += align(out_bytes[i]);
      }
      if (staging_.size() < need) {
        KILNRT_CU_CHECK(api, api.StreamSynchronize(s), "ExecutionContext::run");
        staging_ = kc::PinnedBuffer(device_, need);
        pinned = static_cast<char*>(staging_.data());
      }
    }
    std::vector<size_t> out_off;
    for (size_t i = 0; i < out_infos.size(); ++i) {
      out_off.push_back(off);
      if (out_bytes[i] > 0)
        KILNRT_CU_CHECK(api, api.MemcpyDtoHAsync(pinned + off, dptr(runner_->output_device_ptr(i)), out_bytes[i], s),
                        "output '" + out_infos[i].name + "'");
      off += align(out_bytes[i]);
    }
    KILNRT_CU_CHECK(api, api.StreamSynchronize(s), "ExecutionContext::run");  // the one sync of the call
    std::map<std::string, Tensor> out;
    for (size_t i = 0; i < out_infos.size(); ++i)
      out[out_infos[i].name] = Tensor::from_data(pinned + out_off[i], out_infos[i].dtype, out_shapes[i]);
    return out;
  }

  void enqueue(const std::map<std::string, DeviceTensor>& inputs, const std::map<std::string, DeviceTensor>& outputs,
               void* stream) override {
    const auto& in_infos = engine_->inputs();
    const auto& out_infos = engine_->outputs();
    for (const auto& [name, t] : inputs) find_input(name);
    for (const auto& [name, t] : outputs) find_output(name);
    std::vector<Shape> shapes;
    std::vector<const void*> in_ptrs;
    for (const TensorInfo& info : in_infos) {
      auto where = [&] { return "input '" + info.name + "'"; };  // built only for an error (a per-call path)
      auto it = inputs.find(info.name);
      KILNRT_CHECK(it != inputs.end(), kInvalidArgument, where(), "missing input '" << info.name << "'");
      KILNRT_CHECK(it->second.dtype == info.dtype, kInvalidArgument, where(),
                   "expected dtype " << dtype_name(info.dtype) << ", got " << dtype_name(it->second.dtype));
      validate_input_shape(info, engine_->profiles(), it->second.shape);
      shapes.push_back(it->second.shape);
      in_ptrs.push_back(it->second.data);
    }
    // Resolve the caller's stream against the caller's context before pushing ours (invariant 2).
    CUstream s = kc::resolve_stream(static_cast<kc::StreamHandle>(stream), device_).handle;
    std::lock_guard<std::mutex> lock(mutex_);
    kc::ContextGuard guard(device_);
    // Every bound pointer is checked before anything launches (memory type, device ordinal, owning context).
    for (size_t i = 0; i < in_infos.size(); ++i)
      check_device_pointer(in_ptrs[i], shape_numel(shapes[i]) * dtype_size(in_infos[i].dtype),
                           inputs.at(in_infos[i].name).device, "input '" + in_infos[i].name + "'",
                           dtype_size(in_infos[i].dtype));
    runner_->prepare(shapes, s);
    check_activation_memory();
    const std::vector<Shape> out_shapes = runner_->output_shapes();
    std::vector<void*> out_ptrs;
    for (size_t i = 0; i < out_infos.size(); ++i) {
      const std::string where = "output '" + out_infos[i].name + "'";
      auto it = outputs.find(out_infos[i].name);
      KILNRT_CHECK(it != outputs.end(), kInvalidArgument, where, "missing output '" << out_infos[i].name << "'");
      KILNRT_CHECK(it->second.dtype == out_infos[i].dtype, kInvalidArgument, where,
                   "expected dtype " << dtype_name(out_infos[i].dtype) << ", got " << dtype_name(it->second.dtype));
      KILNRT_CHECK(it->second.shape == out_shapes[i], kInvalidArgument, where,
                   "expected shape " << shape_to_string(out_shapes[i]) << " for these inputs, got "
                                     << shape_to_string(it->second.shape));
      check_device_pointer(it->second.data, shape_numel(out_shapes[i]) * dtype_size(out_infos[i].dtype),
                           it->second.device, where, dtype_size(out_infos[i].dtype));
      out_ptrs.push_back(it->second.data);
    }
    runner_->enqueue(in_ptrs, out_ptrs, s);
  }

  void set_activation_memory(void* device_ptr, size_t bytes) override {
    const std::string what = "activation memory";
    const size_t need = engine_->activation_memory_size();
    KILNRT_CHECK(device_ptr, kInvalidArgument, what, "the activation memory pointer is null");
    KILNRT_CHECK(bytes >= need, kInvalidArgument, what,
                 "activation memory of " << bytes << " bytes is too small: the engine needs " << need
                                         << " bytes (Engine::activation_memory_size())");
    KILNRT_CHECK(reinterpret_cast<uintptr_t>(device_ptr) % 256 == 0, kInvalidArgument, what,
                 "activation memory at " << device_ptr << " is not 256-byte aligned");
    KILNRT_CHECK(bytes > 0, kInvalidArgument, what, "activation memory of 0 bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    kc::ContextGuard guard(device_);
    kc::check_device_pointer(device_ptr, device_, what);
    kc::check_device_pointer(static_cast<const char*>(device_ptr) + bytes - 1, device_, what + " (its last byte)");
    runner_->set_external_arena(device_ptr, bytes);
  }

  void set_cuda_graphs(bool enabled) override {
    std::lock_guard<std::mutex> lock(mutex_);
    runner_->set_graphs_enabled(enabled);
  }
  std::string last_execution_mode() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return runner_->last_mode() == CudaRunner::Mode::kNone ? "" : CudaRunner::mode_name(runner_->last_mode());
  }
  void set_profiling(bool enabled) override {
    std::lock_guard<std::mutex> lock(mutex_);
    kc::ContextGuard guard(device_);
    // Timings stay readable after profiling is turned off; turning it on starts over.
    kept_timings_ = enabled ? std::vector<LayerTiming>{} : runner_->layer_timings();
    runner_->set_profiling(enabled);
  }
  bool profiling() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return runner_->profiling();
  }
  std::vector<LayerTiming> layer_timings() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return finish_layer_timings(*engine_, runner_->profiling() ? runner_->layer_timings() : kept_timings_);
  }
  size_t device_memory_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return runner_->device_memory_bytes();
  }

  std::map<std::string, Shape> output_shapes(const std::map<std::string, Shape>& input_shapes) override {
    std::vector<Shape> shapes;
    for (const TensorInfo& info : engine_->inputs()) {
      auto it = input_shapes.find(info.name);
      KILNRT_CHECK(it != input_shapes.end(), kInvalidArgument, "input '" + info.name + "'",
                   "missing shape of input '" << info.name << "'");
      validate_input_shape(info, engine_->profiles(), it->second);
      shapes.push_back(it->second);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    kc::ContextGuard guard(device_);
    runner_->prepare(shapes, own_stream());
    const std::vector<Shape> out = runner_->output_shapes();
    std::map<std::string, Shape> result;
    for (size_t i = 0; i < out.size(); ++i) result[engine_->outputs()[i].name] = out[i];
    return result;
  }

 private:
  static size_t align(size_t n) { return (n + 255) / 256 * 256; }

  // After prepare(): a context using the caller's activation memory has enough of it for the prepared shapes.
  void check_activation_memory() const {
    if (!runner_->external_arena()) return;
    const size_t need = runner_->prepared_arena_bytes(), have = runner_->arena_capacity();
    KILNRT_CHECK(have > 0 || need == 0, kInvalidArgument, "activation memory",
                 "this context was created without activation memory (ContextOptions::allocate_activations = false): "
                 "call set_activation_memory() with at least "
                     << std::max(need, engine_->activation_memory_size()) << " bytes of device memory first");
    KILNRT_CHECK(have >= need, kInvalidArgument, "activation memory",
                 "these input shapes need " << need << " bytes of activation memory; set_activation_memory() gave "
                                            << have << " bytes");
  }

  // The context's own stream (run(), output_shapes()), created on first use in relaxed capture mode.
  kc::StreamHandle own_stream() {
    if (!stream_) {
      kc::RelaxedCaptureMode relaxed;
      stream_ = kc::Stream(device_, /*non_blocking=*/true);
    }
    return stream_.get();
  }

  // Invariant 2: device memory of the engine's device (memory type, ordinal), owned by its primary context when
  // the driver reports an owner (NULL for cudaMallocAsync pools / VMM allocators) — kilnrt::cuda::
  // check_device_pointer, with its errors that say what to do. Empty tensors may have any pointer.
  void check_device_pointer(const void* p, size_t bytes, int claimed_device, const std::string& where,
                            size_t element_size) const {
    if (bytes == 0) return;
    KILNRT_CHECK(claimed_device == device_, kInvalidArgument, where,
                 where << " is a tensor on cuda:" << claimed_device << " but the engine runs on cuda:" << device_
                       << ": move the tensor to cuda:" << device_ << " or load the engine on cuda:" << claimed_device);
    // Memory kind, device, owning context, alignment and allocation size: one driver query.
    kc::check_device_tensor(p, bytes, element_size, device_, kc::primary_context(device_), where);
  }

  const TensorInfo& find_input(const std::string& name) const {
    for (const TensorInfo& info : engine_->inputs())
      if (info.name == name) return info;
    KILNRT_THROW(kInvalidArgument, "input '" + name + "'", "the engine has no input named '" << name << "'");
  }
  const TensorInfo& find_output(const std::string& name) const {
    for (const TensorInfo& info : engine_->outputs())
      if (info.name == name) return info;
    KILNRT_THROW(kInvalidArgument, "output '" + name + "'", "the engine has no output named '" << name << "'");
  }

  std::shared_ptr<const Engine> engine_;
  const CudaPlan& plan_;
  int device_;
  mutable std::mutex mutex_;  // one call at a time: the runner (arena, graphs, handles) is not thread-safe
  std::unique_ptr<CudaRunner> runner_;
  std::vector<LayerTiming> kept_timings_;  // of the last profiling session, once turned off
  kc::Stream stream_;
  kc::PinnedBuffer staging_;
  std::map<std::string, Shape> shapes_;
};

}  // namespace

std::unique_ptr<ExecutionContext> make_cuda_context(std::shared_ptr<const Engine> engine,
                                                    const ContextOptions& options) {
  return std::make_unique<CudaExecutionContext>(std::move(engine), options);
}

#endif  // KILNRT_HAVE_CUDA

}  // namespace kilnrt::engine
