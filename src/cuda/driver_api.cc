// The driver table: filled lazily from the statically linked cudart (cudaGetDriverEntryPointByVersion at a pinned
// ABI version), plus the fork / exit flags every GPU entry and every destructor consults.
#include "cuda/driver_api.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "core/check.h"
#include "cuda/call_injection.h"

namespace kilnrt::cuda {
namespace {

enum LoadState : int { kNotTried = 0, kLoaded = 1, kFailed = 2 };

// All of this is constant-initialised (no dynamic initialiser runs at load) and trivially destructible, so that
// static destructors of other objects may still read it while exit() runs. The reason string is leaked on purpose.
DriverApi g_real_api;
std::atomic<int> g_state{kNotTried};
std::string* g_failure_reason = nullptr;  // leaked; written once under g_load_mutex before g_state = kFailed
std::mutex g_load_mutex;
std::atomic<const DriverApi*> g_override{nullptr};
std::atomic<bool> g_initialised{false};
std::atomic<bool> g_forked_child{false};
std::atomic<bool> g_exiting{false};
std::once_flag g_handlers_once;

constexpr const char* kNoDriverMessage =
    "no CUDA driver (libcuda.so.1) found: install the NVIDIA driver; kilnrt's CPU backend still works";

void on_fork_child() {
  // Async-signal-safe: only atomics. A child forked before any CUDA use stays fully usable.
  if (g_initialised.load(std::memory_order_relaxed)) g_forked_child.store(true, std::memory_order_relaxed);
}

void on_exit() { g_exiting.store(true, std::memory_order_relaxed); }

std::string version_string(int v) {
  std::ostringstream os;
  os << v / 1000 << "." << (v % 1000) / 10;
  return os.str();
}

// Fills g_real_api and calls cuInit; returns the empty string on success or why it failed.
std::string load_real_driver() {
  int driver_version = 0;
  cudaError_t e = cudaDriverGetVersion(&driver_version);
  if (e != cudaSuccess || driver_version == 0) return kNoDriverMessage;

  DriverApi api;
  std::string missing;
#define KILNRT_CUDA_DRIVER_LOAD(member, symbol, type)                                                          \
  {                                                                                                            \
    void* fn = nullptr;                                                                                        \
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;                                \
    cudaError_t err =                                                                                          \
        cudaGetDriverEntryPointByVersion(#symbol, &fn, kDriverAbiVersion, cudaEnableLegacyStream, &query);     \
    if (err == cudaErrorInsufficientDriver) {                                                                  \
      std::ostringstream os;                                                                                   \
      os << "the CUDA driver (supports CUDA " << version_string(driver_version) << ") is older than the CUDA " \
         << version_string(CUDART_VERSION)                                                                     \
         << " runtime kilnrt was built with: update the NVIDIA driver; kilnrt's CPU backend still works";      \
      return os.str();                                                                                         \
    }                                                                                                          \
    if (err != cudaSuccess || query != cudaDriverEntryPointSuccess || fn == nullptr) {                         \
      if (!missing.empty()) missing += ", ";                                                                   \
      missing += #symbol;                                                                                      \
    } else {                                                                                                   \
      api.member = reinterpret_cast<type>(fn);                                                                 \
    }                                                                                                          \
  }
  KILNRT_CUDA_DRIVER_FUNCTIONS(KILNRT_CUDA_DRIVER_LOAD)
#undef KILNRT_CUDA_DRIVER_LOAD
#define KILNRT_CUDA_DRIVER_LOAD_OPTIONAL(member, symbol, type, version)                                           \
  {                                                                                                               \
    void* fn = nullptr;                                                                                           \
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;                                   \
    if (cudaGetDriverEntryPointByVersion(#symbol, &fn, version, cudaEnableLegacyStream, &query) == cudaSuccess && \
        query == cudaDriverEntryPointSuccess)                                                                     \
      api.member = reinterpret_cast<type>(fn);                                                                    \
  }
  KILNRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(KILNRT_CUDA_DRIVER_LOAD_OPTIONAL)
#undef KILNRT_CUDA_DRIVER_LOAD_OPTIONAL
  if (!missing.empty()) {
    std::ostringstream os;
    os << "the CUDA driver (supports CUDA " << version_string(driver_version) << ") lacks entry points " << missing
       << " at ABI version " << version_string(kDriverAbiVersion) << ": update the NVIDIA driver";
    return os.str();
  }
  CUresult r = api.Init(0);
  if (r != CUDA_SUCCESS) {
    std::ostringstream os;
    os << "cuInit failed: " << driver_error_string(api, r);
    if (r == CUDA_ERROR_NO_DEVICE)
      os << ": no CUDA-capable GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    else if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
      os << ": update the NVIDIA driver";
    os << "; kilnrt's CPU backend still works";
    return os.str();
  }
  // Every entry point goes through a failure-injection trampoline (cuda/call_injection.h; a no-op unless a test
  // arms it).
#define KILNRT_CUDA_DRIVER_WRAP(member, symbol, type) api.member = KILNRT_INJECTABLE_CALL(#symbol, api.member);
  KILNRT_CUDA_DRIVER_FUNCTIONS(KILNRT_CUDA_DRIVER_WRAP)
#undef KILNRT_CUDA_DRIVER_WRAP
#define KILNRT_CUDA_DRIVER_WRAP_OPTIONAL(member, symbol, type, version) \
  if (api.member) api.member = KILNRT_INJECTABLE_CALL(#symbol, api.member);
  KILNRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(KILNRT_CUDA_DRIVER_WRAP_OPTIONAL)
#undef KILNRT_CUDA_DRIVER_WRAP_OPTIONAL
  g_real_api = api;
  return {};
}

const DriverApi* active_api(std::string* why_not) {
  if (g_forked_child.load(std::memory_order_relaxed)) {
    if (why_not) *why_not = forked_child_message();
    return nullptr;
  }
  if (const DriverApi* o = g_override.load(std::memory_order_acquire)) return o;
  int state = g_state.load(std::memory_order_acquire);
  if (state == kNotTried) {
    std::lock_guard<std::mutex> lock(g_load_mutex);
    state = g_state.load(std::memory_order_acquire);
    if (state == kNotTried) {
      std::string reason;
      try {
        reason = load_real_driver();
      } catch (const std::exception& ex) {
        reason = std::string("loading the CUDA driver failed: ") + ex.what();
      }
      if (reason.empty()) {
        state = kLoaded;
        g_state.store(kLoaded, std::memory_order_release);
        note_cuda_initialised();
      } else {
        g_failure_reason = new std::string(std::move(reason));
        state = kFailed;
        g_state.store(kFailed, std::memory_order_release);
      }
    }
  }
  if (state == kLoaded) return &g_real_api;
  if (why_not) *why_not = g_failure_reason ? *g_failure_reason : kNoDriverMessage;
  return nullptr;
}

}  // namespace

const DriverApi& driver_api() {
  std::string why;
  const DriverApi* api = active_api(&why);
  if (!api) throw Error(ErrorCode::kCuda, why, "", "driver_api()", __FILE__, __LINE__);
  return *api;
}

const DriverApi* try_driver_api(std::string* why_not) {
  try {
    return active_api(why_not);
  } catch (...) {  // std::bad_alloc from the reason string: report it rather than throw
    if (why_not) *why_not = "out of memory while loading the CUDA driver table";
    return nullptr;
  }
}

void set_driver_api_for_testing(const DriverApi* api) { g_override.store(api, std::memory_order_release); }

bool cuda_initialised() { return g_initialised.load(std::memory_order_relaxed); }
bool forked_after_cuda_init() { return g_forked_child.load(std::memory_order_relaxed); }
bool process_exiting() { return g_exiting.load(std::memory_order_relaxed); }
bool cleanup_allowed() { return !process_exiting() && !forked_after_cuda_init(); }

void note_cuda_initialised() {
  g_initialised.store(true, std::memory_order_relaxed);
  // Registered after cudart initialised itself, so that our exit handler runs before cudart's own teardown.
  std::call_once(g_handlers_once, [] {
    pthread_atfork(nullptr, nullptr, &on_fork_child);
    std::atexit(&on_exit);
  });
}

void set_cuda_state_for_testing(bool initialised, bool forked_child) {
  g_initialised.store(initialised, std::memory_order_relaxed);
  g_forked_child.store(forked_child, std::memory_order_relaxed);
}

const char* forked_child_message() {
  return "CUDA was initialised in the parent before fork(); the CUDA driver cannot be used in the forked child. "
         "Use the 'spawn' (or 'forkserver') start method for multiprocessing / DataLoader workers, or create "
         "engines in the child only (do not touch the GPU in the parent before forking)";
}

std::string driver_error_string(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.GetErrorName) api.GetErrorName(result, &name);
  if (api.GetErrorString) api.GetErrorString(result, &text);
  std::ostringstream os;
  if (name)
    os << name;
  else
    os << "CUresult " << static_cast<int>(result);
  if (text) os << " (" << text << ")";
  return os.str();
}

void throw_driver_error(const DriverApi& api, CUresult result, const char* expression, const std::string& where,
                        const char* file, int line) {
  std::string message = driver_error_string(api, result);
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      message += ": free GPU memory (other processes, caches such as torch.cuda.empty_cache()) or use smaller shapes";
      throw Error(ErrorCode::kOutOfMemory, message, where, expression, file, line);
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      message +=
          ": the resource belongs to another (or a destroyed) context; use streams and memory of the "
          "device's primary context (what the CUDA runtime and PyTorch use)";
      break;
    case CUDA_ERROR_INVALID_HANDLE:
      message += ": a stream, event or module handle is invalid or belongs to another context";
      break;
    default: break;
  }
  throw Error(ErrorCode::kCuda, message, where, expression, file, line);
}

}  // namespace kilnrt::cuda
