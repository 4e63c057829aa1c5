// Capture safety (docs/architecture.md, invariant 4).
//
// RelaxedCaptureMode: while a caller's stream captures a CUDA graph (torch.cuda.graph captures in GLOBAL mode by
// default), "potentially unsafe" calls from this thread — cuMemAlloc, cuStreamCreate, library handle creation —
// fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the caller's capture. Preparation that must
// allocate runs with the calling thread switched to relaxed capture mode (cuThreadExchangeStreamCaptureMode, what
// PyTorch's caching allocator does for cudaMalloc under capture); the previous mode is restored by the destructor,
// also during unwinding. Relaxed mode changes nothing when no capture is in progress.
//
// CaptureGate: one reader/writer gate per device. kilnrt's own graph captures (CudaGraph::capture, thread-local
// mode on a private stream) hold it shared; operations that may synchronise the whole context hold it exclusive:
// device / pinned allocation and free, library handle creation and destruction, and the first (warm-up) launch of
// a shape tuple, whose first kernel launches may load modules lazily (CUDA_MODULE_LOADING=LAZY: "loading kernels
// might require context synchronization"). A context-wide synchronisation from one thread invalidates a capture in
// progress on another thread whatever its mode — the cause of the "CUDA graph capture failed ... cuDNN
// EXECUTION_FAILED" / EXECUTION_FAILED_CUDART pairs with 8 threads on one engine. The gate is re-entrant per thread
// (an exclusive or shared holder passes through nested scopes), so it cannot self-deadlock.
#pragma once

#include <cuda.h>

namespace kilnrt::cuda {

class RelaxedCaptureMode {
 public:
  // Throws kilnrt::Error (kCuda) when the driver table lacks cuThreadExchangeStreamCaptureMode.
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool active_ = false;
};

class CaptureGate {
 public:
  enum class Kind { kShared, kExclusive };
  // Blocks until the gate of `device` can be held in `kind` (no-op when this thread already holds it).
  CaptureGate(int device, Kind kind);
  ~CaptureGate();
  CaptureGate(const CaptureGate&) = delete;
  CaptureGate& operator=(const CaptureGate&) = delete;

 private:
  int slot_ = -1;
  Kind kind_ = Kind::kShared;
};

}  // namespace kilnrt::cuda
