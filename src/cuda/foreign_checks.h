// Checks of resources the caller hands kilnrt (docs/architecture.md, invariant 2): device pointers (torch / cupy /
// pycuda tensors) and streams. A mismatch is a kilnrt::Error (kInvalidArgument) that says what is wrong and what to do
// — never "invalid resource handle" from a later launch, never silent zeros.
#pragma once
#include <cuda.h>

#include <string>

#include "kilnrt/cuda/stream.h"

namespace kilnrt::cuda {

// What cuPointerGetAttributes says about an address.
struct PointerAttributes {
  CUcontext context = nullptr;  // NULL for cudaMallocAsync pools and VMM (cuMemMap / expandable_segments) memory
  unsigned memory_type = 0;     // CUmemorytype; 0 = not CUDA memory (plain host memory)
  int device_ordinal = -1;
  bool managed = false;
  // The allocation around the address, trusted only for plain cuMemAlloc / cudaMalloc memory (the legacy-IPC
  // capable kind); stream-ordered pools and VMM allocators report no reliable range.
  bool legacy_ipc = false;
  CUdeviceptr range_start = 0;
  size_t range_size = 0;
};

// One cuPointerGetAttributes call for all of the above (under the guard of `device`).
PointerAttributes query_pointer_attributes(const void* ptr, int device);

// The decision alone (no driver calls): throws when `a` (of `ptr`) is not usable as device memory of `device`,
// whose primary context is `primary`. `what` names the tensor ("input 'images'").
void validate_pointer_attributes(const void* ptr, const PointerAttributes& a, int device, CUcontext primary,
                                 const std::string& what);

// Device memory of `expected_device` (device or managed memory; the owning context, when the driver reports one,
// must be that device's primary context). Host memory, other devices' memory and memory of user-created contexts
// are rejected with a clear error. Runs under the guard; the caller's context is unchanged.
void check_device_pointer(const void* ptr, int expected_device, const std::string& what);

// check_device_pointer + check_buffer_range (buffer_checks.h: alignment, allocation size) from one driver query: the
// per-call check of a bound tensor of `bytes` bytes whose element size is `alignment`. `primary` is expected_device's
// primary context. Call under the context guard.
void check_device_tensor(const void* ptr, size_t bytes, size_t alignment, int expected_device, CUcontext primary,
                         const std::string& what);

enum class StreamKind { kLegacyDefault, kPerThreadDefault, kExplicit };

struct ResolvedStream {
  CUstream handle = nullptr;  // to pass to the driver inside a guard for the device
  StreamKind kind = StreamKind::kExplicit;
};

// Resolves a caller's stream for work on `device`, against the caller's current context, before anything is pushed:
//  - 0 / CU_STREAM_LEGACY: the legacy default stream; CU_STREAM_PER_THREAD: the per-thread default stream. They
//    name a stream of the caller's current context, so that must be device's primary context, another device's
//    primary context (the default stream of `device` is then used) or none; with a user-created context current
//    (pycuda) the handle would mean that context's stream: a clear error.
//  - any other handle: cuStreamGetCtx must be device's primary context, else "stream belongs to another CUDA
//    context ..." naming it (another device's primary context, or a user-created context) and what to do.
ResolvedStream resolve_stream(StreamHandle handle, int device);

}  // namespace kilnrt::cuda
