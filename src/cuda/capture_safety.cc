// Relaxed capture mode scope and the per-device capture gate (see capture_safety.h).
#include "cuda/capture_safety.h"

#include <shared_mutex>

#include "core/check.h"
#include "core/logging.h"
#include "cuda/driver_api.h"

namespace kilnrt::cuda {
namespace {

constexpr int kMaxDevices = 64;

// Leaked on purpose: daemon threads may still hold a gate while the process exits, and no static initialiser or
// destructor in src/cuda may touch anything.
std::shared_mutex* gates() {
  static std::shared_mutex* g = new std::shared_mutex[kMaxDevices];
  return g;
}

// Per-thread holding state of each device's gate: 0 none, 1 shared, 2 exclusive, with a nesting depth.
thread_local unsigned char t_held[kMaxDevices] = {};
thread_local unsigned t_depth[kMaxDevices] = {};

}  // namespace

RelaxedCaptureMode::RelaxedCaptureMode() {
  const DriverApi& api = driver_api();
  KILNRT_CHECK(api.ThreadExchangeStreamCaptureMode != nullptr, kCuda, "capture mode",
               "the CUDA driver table lacks cuThreadExchangeStreamCaptureMode: kilnrt cannot allocate while a "
               "caller's stream captures a CUDA graph; run the engine once with these shapes before capturing");
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  KILNRT_CU_CHECK(api, api.ThreadExchangeStreamCaptureMode(&mode), "capture mode");
  previous_ = mode;
  active_ = true;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (!active_) return;
  const DriverApi* api = try_driver_api(nullptr);
  if (!api || !api->ThreadExchangeStreamCaptureMode) return;
  CUstreamCaptureMode mode = previous_;
  const CUresult r = api->ThreadExchangeStreamCaptureMode(&mode);
  if (r != CUDA_SUCCESS)
    KILNRT_LOG(kWarning, "could not restore the thread's stream capture mode: " << driver_error_string(*api, r));
}

CaptureGate::CaptureGate(int device, Kind kind) : kind_(kind) {
  if (device < 0 || device >= kMaxDevices) return;
  if (t_depth[device] > 0) {  // this thread holds it already (shared inside exclusive is fine; see the header)
    ++t_depth[device];
    slot_ = device;
    return;
  }
  if (kind == Kind::kExclusive) {
    gates()[device].lock();
    t_held[device] = 2;
  } else {
    gates()[device].lock_shared();
    t_held[device] = 1;
  }
  t_depth[device] = 1;
  slot_ = device;
}

CaptureGate::~CaptureGate() {
  if (slot_ < 0) return;
  if (--t_depth[slot_] > 0) return;
  if (t_held[slot_] == 2)
    gates()[slot_].unlock();
  else
    gates()[slot_].unlock_shared();
  t_held[slot_] = 0;
}

}  // namespace kilnrt::cuda
