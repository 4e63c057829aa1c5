// Kernel: NVRTC-compiled (or precompiled) code loaded into a device's primary context, shared per (code, device),
// launched under the context guard.
#include "kilnrt/cuda/kernel.h"

#include <map>
#include <mutex>
#include <tuple>

#include "core/check.h"
#include "cuda/context_guard.h"
#include "cuda/nvrtc_compiler.h"

namespace kilnrt::cuda {

// A loaded CUmodule; unloaded when the last Kernel using it goes (leaked at exit / in a forked child).
struct Kernel::Module {
  CUmodule module = nullptr;
  int device = -1;
  ~Module() {
    if (!module) return;
    CUmodule m = module;
    release_quietly(device, "a CUDA module", [m](const DriverApi& api) { return api.ModuleUnload(m); });
  }
};

namespace {

// In-process cache of loaded modules per (code identity, device, driver table): weak, so a module is unloaded when
// no Kernel uses it any more. Built on first use and leaked (no static initialiser or destructor).
struct ModuleCache {
  std::mutex mutex;
  std::map<std::tuple<std::string, int, const void*>, std::weak_ptr<Kernel::Module>> modules;
  std::map<std::tuple<std::string, int, const void*>, std::shared_ptr<const CompiledCode>> codes;
};
ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache;
  return *cache;
}

std::string module_load_hint(CUresult r, const CompiledCode& code) {
  switch (r) {
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return ": the NVIDIA driver is older than the NVRTC (" + std::to_string(code.nvrtc_version / 1000) + "." +
             std::to_string((code.nvrtc_version % 1000) / 10) +
             ") that produced this code: update the driver, or use an NVRTC no newer than the driver";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_INVALID_IMAGE:
      return ": the code (" + code.target_name() + ") does not fit this GPU; rebuild it for this GPU";
    default: return {};
  }
}

std::shared_ptr<Kernel::Module> load_module(int device, const CompiledCode& code) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  auto module = std::make_shared<Kernel::Module>();
  module->device = device;
  CUmodule m = nullptr;
  CUresult r = api.ModuleLoadData(&m, code.image.c_str());  // PTX: c_str() terminates the text
  if (r != CUDA_SUCCESS) {
    std::string names;
    for (const auto& n : code.names) names += (names.empty() ? "" : ", ") + n;
    const std::string where = "kernel " + names + " (" + code.target_name() + ")";
    if (r == CUDA_ERROR_OUT_OF_MEMORY) throw_driver_error(api, r, "cuModuleLoadData", where, __FILE__, __LINE__);
    throw Error(ErrorCode::kCuda, driver_error_string(api, r) + module_load_hint(r, code), where,
                "api.ModuleLoadData(&m, code.image.c_str())", __FILE__, __LINE__);
  }
  module->module = m;
  return module;
}

}  // namespace

int device_compute_capability(int device) {
  const DriverApi& api = driver_api();
  CUdevice dev = 0;
  const std::string where = "device " + std::to_string(device);
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), where);
  int major = 0, minor = 0;
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), where);
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), where);
  return major * 10 + minor;
}

Kernel Kernel::compile(int device, const std::string& source, const std::string& name,
                       const KernelCompileOptions& options) {
  KILNRT_CHECK(!name.empty(), kInvalidArgument, "Kernel::compile", "kernel name is empty");
  const NvrtcApi& nv = nvrtc_api();
  const CompileTarget target = choose_target(device_compute_capability(device), nv.supported_archs, nv.version);
  const std::string key = compile_key_material(source, {name}, options.nvrtc_options, target, nv.version);
  const DriverApi* api = &driver_api();
  ModuleCache& cache = module_cache();
  const auto cache_key = std::make_tuple(key, device, static_cast<const void*>(api));
  std::shared_ptr<Module> module;
  std::shared_ptr<const CompiledCode> code;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.modules.find(cache_key);
    if (it != cache.modules.end()) {
      module = it->second.lock();
      if (module) code = cache.codes[cache_key];
      if (!module) {
        cache.modules.erase(it);
        cache.codes.erase(cache_key);
      }
    }
  }
  if (!module) {
    code = compile_cuda(source, {name}, target, options);
    module = load_module(device, *code);
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto& slot = cache.modules[cache_key];
    if (auto existing = slot.lock()) {  // another thread loaded it meanwhile: share theirs
      module = existing;
      code = cache.codes[cache_key];
    } else {
      slot = module;
      cache.codes[cache_key] = code;
    }
  }
  Kernel k;
  k.device_ = device;
  k.name_ = name;
  k.code_ = code;
  k.module_ = module;
  ContextGuard guard(device);
  CUfunction fn = nullptr;
  KILNRT_CU_CHECK(guard.api(), guard.api().ModuleGetFunction(&fn, module->module, code->lowered_name(name).c_str()),
                  "kernel '" + name + "'");
  k.function_ = fn;
  return k;
}

Kernel Kernel::load(int device, std::shared_ptr<const CompiledCode> code, const std::string& name) {
  KILNRT_CHECK(code != nullptr && !code->image.empty(), kInvalidArgument, "kernel '" + name + "'",
               "Kernel::load needs compiled code");
  const std::string& lowered = code->lowered_name(name);
  Kernel k;
  k.device_ = device;
  k.name_ = name;
  k.module_ = load_module(device, *code);
  k.code_ = std::move(code);
  ContextGuard guard(device);
  CUfunction fn = nullptr;
  KILNRT_CU_CHECK(guard.api(), guard.api().ModuleGetFunction(&fn, k.module_->module, lowered.c_str()),
                  "kernel '" + name + "'");
  k.function_ = fn;
  return k;
}

void Kernel::launch_raw(Dim3 grid, Dim3 block, unsigned shared_mem_bytes, StreamHandle stream, void** params) const {
  KILNRT_CHECK(function_ != nullptr, kInvalidArgument, "Kernel::launch", "launch() on an empty Kernel");
  KILNRT_CHECK(grid.x && grid.y && grid.z && block.x && block.y && block.z, kInvalidArgument, "kernel '" + name_ + "'",
               "launch of '" << name_ << "' with an empty grid (" << grid.x << "x" << grid.y << "x" << grid.z
                             << ") or block (" << block.x << "x" << block.y << "x" << block.z << ")");
  ContextGuard guard(device_);
  const DriverApi& api = guard.api();
  if (shared_mem_bytes > 48 * 1024) {
    // Dynamic shared memory above 48 KiB must be opted into per function.
    KILNRT_CU_CHECK(api,
                    api.FuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(shared_mem_bytes)),
                    "kernel '" + name_ + "'");
  }
  // The launch's own status: never cudaGetLastError, which would clear errors of other libraries.
  KILNRT_CU_CHECK(api,
                  api.LaunchKernel(function_, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_mem_bytes,
                                   stream, params, nullptr),
                  "kernel '" + name_ + "'");
}

}  // namespace kilnrt::cuda
