#include "cuda/context_guard.h"

#include <atomic>
#include <mutex>

#include "core/check.h"
#include "core/logging.h"

namespace kilnrt::cuda {
namespace {

constexpr int kMaxDevices = 64;

// Constant-initialised, trivially destructible: readable during exit. Retained contexts are never released (the
// process owns them until it ends; releasing at exit would call a driver that may already be torn down).
std::mutex g_ctx_mutex;
std::atomic<CUcontext> g_primary[kMaxDevices];
std::atomic<const DriverApi*> g_primary_owner{nullptr};  // the table the cached contexts came from

}  // namespace

int device_count() {
  const DriverApi& api = driver_api();
  int count = 0;
  KILNRT_CU_CHECK(api, api.DeviceGetCount(&count), "device_count");
  return count;
}

CUcontext retained_primary_context(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  std::string why;
  const DriverApi* api = try_driver_api(&why);
  if (!api || g_primary_owner.load(std::memory_order_acquire) != api) return nullptr;
  return g_primary[device].load(std::memory_order_acquire);
}

CUcontext primary_context(int device) {
  const DriverApi& api = driver_api();
  if (device >= 0 && device < kMaxDevices && g_primary_owner.load(std::memory_order_acquire) == &api) {
    if (CUcontext ctx = g_primary[device].load(std::memory_order_acquire)) return ctx;
  }
  std::lock_guard<std::mutex> lock(g_ctx_mutex);
  if (g_primary_owner.load(std::memory_order_relaxed) != &api) {
    // First use, or a test swapped the table: the cached contexts belong to another table.
    for (auto& c : g_primary) c.store(nullptr, std::memory_order_relaxed);
    g_primary_owner.store(&api, std::memory_order_release);
  }
  int count = 0;
  KILNRT_CU_CHECK(api, api.DeviceGetCount(&count), "primary_context");
  KILNRT_CHECK(device >= 0 && device < count, kInvalidArgument, "device " + std::to_string(device),
               "CUDA device " << device << " does not exist: " << count << " device(s) visible"
                              << " (check CUDA_VISIBLE_DEVICES)");
  KILNRT_CHECK(device < kMaxDevices, kUnsupported, "device " + std::to_string(device),
               "kilnrt supports at most " << kMaxDevices << " devices per process");
  if (CUcontext ctx = g_primary[device].load(std::memory_order_relaxed)) return ctx;
  CUdevice dev = 0;
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), "device " + std::to_string(device));
  CUcontext ctx = nullptr;
  KILNRT_CU_CHECK(api, api.DevicePrimaryCtxRetain(&ctx, dev), "device " + std::to_string(device));
  KILNRT_CHECK(ctx != nullptr, kCuda, "device " + std::to_string(device),
               "cuDevicePrimaryCtxRetain returned no context");
  g_primary[device].store(ctx, std::memory_order_release);
  return ctx;
}

ContextGuard::ContextGuard(int device) : api_(&driver_api()), device_(device) {
  ctx_ = primary_context(device);
  CUcontext current = nullptr;
  KILNRT_CU_CHECK(*api_, api_->CtxGetCurrent(&current), "ContextGuard(device " + std::to_string(device) + ")");
  if (current != ctx_) {
    KILNRT_CU_CHECK(*api_, api_->CtxPushCurrent(ctx_), "ContextGuard(device " + std::to_string(device) + ")");
    pushed_ = true;
  }
}

ContextGuard::~ContextGuard() noexcept {
  if (!pushed_) return;
  // In a forked child the inherited driver state is unusable (and we never pushed there: the constructor throws).
  if (forked_after_cuda_init()) return;
  CUcontext popped = nullptr;
  CUresult r = api_->CtxPopCurrent(&popped);
  try {
    if (r != CUDA_SUCCESS) {
      KILNRT_LOG(kWarning, "ContextGuard: cuCtxPopCurrent failed for device "
                               << device_ << ": " << driver_error_string(*api_, r)
                               << "; the calling thread's context stack may be left changed");
    } else if (popped != ctx_) {
      KILNRT_LOG(kWarning, "ContextGuard: popped a different context than the primary context of device "
                               << device_ << " (code inside the guarded scope pushed without popping)");
    }
  } catch (...) {
    // logging must not throw out of a destructor
  }
}

void log_release_failure(const char* what, int device, const std::string& why) noexcept {
  try {
    KILNRT_LOG(kWarning, "releasing " << what << " on device " << device << " failed: " << why);
  } catch (...) {
  }
}

void reset_primary_contexts_for_testing() {
  std::lock_guard<std::mutex> lock(g_ctx_mutex);
  for (auto& c : g_primary) c.store(nullptr, std::memory_order_relaxed);
  g_primary_owner.store(nullptr, std::memory_order_release);
}

}  // namespace kilnrt::cuda
