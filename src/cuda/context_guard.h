// Primary-context guard (docs/architecture.md, invariant 1). Each device's primary context is retained once and kept
// for the life of the process. ContextGuard makes it current for a scope without disturbing the caller: when the
// calling thread's current context is already that primary context, it does nothing; otherwise (no context, another
// device's, or a user-created context) it pushes the primary context and pops it in the destructor — also when the
// scope throws. Never cudaSetDevice: with a user context current, cudaSetDevice would replace it.
#pragma once
#include <cuda.h>

#include <exception>
#include <string>

#include "cuda/driver_api.h"

namespace kilnrt::cuda {

// Number of visible CUDA devices (throws kCuda when no driver / forked child).
int device_count();

// The primary context of `device`, retained on first use and never released. Throws kInvalidArgument for a bad
// ordinal, kCuda when the driver fails.
CUcontext primary_context(int device);

// The primary context of `device` when it was already retained by kilnrt, else nullptr. Never throws, never retains.
CUcontext retained_primary_context(int device) noexcept;

// Logs a warning (never throws): used by release_quietly.
void log_release_failure(const char* what, int device, const std::string& why) noexcept;

class ContextGuard {
 public:
  explicit ContextGuard(int device);
  ~ContextGuard() noexcept;
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

  // The driver table the guard used: calls made inside the scope should go through it.
  const DriverApi& api() const noexcept { return *api_; }
  CUcontext context() const noexcept { return ctx_; }
  int device() const noexcept { return device_; }
  // True when the guard pushed the primary context (false: it was current already).
  bool pushed() const noexcept { return pushed_; }

 private:
  const DriverApi* api_;
  CUcontext ctx_ = nullptr;
  int device_;
  bool pushed_ = false;
};

// For destructors: runs `release(api)` (returning a CUresult) under a guard for `device`. Never throws: failures
// are logged as warnings. Skipped — the resource is leaked to the process — when cleanup_allowed() is false (exit
// began, or a child forked after CUDA init), and silent when the driver is already deinitialised.
template <class Release>
void release_quietly(int device, const char* what, Release&& release) noexcept {
  if (!cleanup_allowed()) return;
  CUresult r = CUDA_SUCCESS;
  std::string failure;
  try {
    ContextGuard guard(device);
    r = release(guard.api());
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) failure = driver_error_string(guard.api(), r);
  } catch (const std::exception& e) {
    try {
      failure = e.what();
    } catch (...) {
    }
  } catch (...) {
    failure = "unknown error";
  }
  if (!failure.empty()) log_release_failure(what, device, failure);
}

// Tests only: forget the retained primary contexts (the fake driver's contexts are not real). Does not release.
void reset_primary_contexts_for_testing();

}  // namespace kilnrt::cuda
