// Foreign pointer and stream checks (see foreign_checks.h).
#include "cuda/foreign_checks.h"

#include <cstdint>
#include <sstream>

#include "core/check.h"
#include "cuda/buffer_checks.h"
#include "cuda/context_guard.h"

namespace kilnrt::cuda {
namespace {

std::string hex(const void* p) {
  std::ostringstream os;
  os << "0x" << std::hex << reinterpret_cast<uintptr_t>(p);
  return os.str();
}

// Describes a context that is not `device`'s primary context: "device 1's primary context" when it is another
// device's (known without retaining anything new: only contexts kilnrt retained, or ones that are already active),
// else "a user-created CUDA context".
std::string describe_foreign_context(const DriverApi& api, CUcontext ctx, int* other_device) {
  *other_device = -1;
  int count = 0;
  if (api.DeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
  for (int d = 0; d < count; ++d) {
    CUcontext known = retained_primary_context(d);
    if (!known && api.DevicePrimaryCtxGetState) {
      CUdevice dev = 0;
      unsigned flags = 0;
      int active = 0;
      if (api.DeviceGet(&dev, d) == CUDA_SUCCESS &&
          api.DevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active) {
        try {
          known = primary_context(d);  // already active: retaining it creates nothing
        } catch (...) {
          known = nullptr;
        }
      }
    }
    if (known && known == ctx) {
      *other_device = d;
      return "the primary context of device " + std::to_string(d);
    }
  }
  return "a user-created CUDA context (cuCtxCreate: e.g. pycuda.autoinit / make_context)";
}

bool is_special_stream(StreamHandle h) {
  return h == nullptr || h == reinterpret_cast<StreamHandle>(CU_STREAM_LEGACY) ||
         h == reinterpret_cast<StreamHandle>(CU_STREAM_PER_THREAD);
}

}  // namespace

PointerAttributes query_pointer_attributes(const void* ptr, int device) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  CUcontext ctx = nullptr;
  unsigned memory_type = 0;
  int ordinal = -1;
  unsigned managed = 0;  // the driver writes a bool; the zeroed rest keeps the value
  unsigned legacy = 0;   // likewise
  CUdeviceptr start = 0;
  size_t size = 0;
  void* data[] = {&ctx, &memory_type, &ordinal, &managed, &legacy, &start, &size};
  // Unlike cuPointerGetAttribute, this succeeds for addresses CUDA does not know (attributes left NULL / 0).
  KILNRT_CU_CHECK(api, api.PointerGetAttributes(7, attrs, data, reinterpret_cast<CUdeviceptr>(ptr)),
                  "pointer " + hex(ptr));
  PointerAttributes a;
  a.context = ctx;
  a.memory_type = memory_type;
  a.device_ordinal = ordinal;
  a.managed = managed != 0;
  a.legacy_ipc = legacy != 0;
  a.range_start = start;
  a.range_size = size;
  return a;
}

void validate_pointer_attributes(const void* ptr, const PointerAttributes& a, int device, CUcontext primary,
                                 const std::string& what) {
  KILNRT_CHECK(ptr != nullptr, kInvalidArgument, what, what << " is a null device pointer");
  if (!a.managed) {
    KILNRT_CHECK(a.memory_type != 0, kInvalidArgument, what,
                 what << " (" << hex(ptr) << ") is not CUDA memory: it looks like ordinary host memory (e.g. a NumPy "
                      << "array or a CPU tensor). Bind it as a host buffer (kilnrt copies it), or copy it to cuda:"
                      << device << " first");
    KILNRT_CHECK(a.memory_type != CU_MEMORYTYPE_HOST, kInvalidArgument, what,
                 what << " (" << hex(ptr) << ") is page-locked host memory (cudaHostAlloc / pin_memory()), not device "
                      << "memory. Bind it as a host buffer, or copy it to cuda:" << device << " first");
    KILNRT_CHECK(a.memory_type == CU_MEMORYTYPE_DEVICE, kInvalidArgument, what,
                 what << " (" << hex(ptr) << ") is not linear device memory (CUmemorytype " << a.memory_type
                      << ", e.g. a CUDA array): pass memory from cudaMalloc / a framework tensor");
  }
  KILNRT_CHECK(a.device_ordinal == device, kInvalidArgument, what,
               what << " (" << hex(ptr) << ") is on cuda:" << a.device_ordinal
                    << " but the engine runs on cuda:" << device << ". Move the tensor (tensor.to('cuda:" << device
                    << "')) or load the engine on cuda:" << a.device_ordinal);
  // The owning context is NULL for cudaMallocAsync pools and VMM memory: those belong to no context and are fine.
  KILNRT_CHECK(a.context == nullptr || a.context == primary, kInvalidArgument, what,
               what << " (" << hex(ptr) << ") was allocated in a CUDA context that is not the primary context of cuda:"
                    << device << " (a context created with cuCtxCreate, e.g. by pycuda.autoinit or make_context). "
                    << "kilnrt runs in the primary context, like the CUDA runtime and PyTorch: allocate the memory "
                    << "through the runtime / PyTorch / CuPy, or in pycuda use device.retain_primary_context() "
                    << "instead of make_context()");
}

void check_device_pointer(const void* ptr, int expected_device, const std::string& what) {
  KILNRT_CHECK(ptr != nullptr, kInvalidArgument, what, what << " is a null device pointer");
  PointerAttributes a = query_pointer_attributes(ptr, expected_device);
  validate_pointer_attributes(ptr, a, expected_device, primary_context(expected_device), what);
}

void check_device_tensor(const void* ptr, size_t bytes, size_t alignment, int expected_device, CUcontext primary,
                         const std::string& what) {
  KILNRT_CHECK(ptr != nullptr, kInvalidArgument, what, what << " is a null device pointer");
  const PointerAttributes a = query_pointer_attributes(ptr, expected_device);
  validate_pointer_attributes(ptr, a, expected_device, primary, what);
  check_buffer_range(ptr, bytes, alignment, a.legacy_ipc, a.range_start, a.range_size, what);
}

ResolvedStream resolve_stream(StreamHandle handle, int device) {
  const DriverApi& api = driver_api();
  CUcontext primary = primary_context(device);
  if (is_special_stream(handle)) {
    // The special handles name a default stream of the caller's *current* context: look before pushing anything.
    CUcontext current = nullptr;
    KILNRT_CU_CHECK(api, api.CtxGetCurrent(&current), "stream " + hex(handle));
    ResolvedStream r;
    r.handle = handle;
    r.kind = handle == reinterpret_cast<StreamHandle>(CU_STREAM_PER_THREAD) ? StreamKind::kPerThreadDefault
                                                                            : StreamKind::kLegacyDefault;
    if (current == nullptr || current == primary) return r;
    int other = -1;
    std::string desc = describe_foreign_context(api, current, &other);
    if (other >= 0) return r;  // another device's primary context is current: use cuda:<device>'s default stream
    KILNRT_THROW(kInvalidArgument, "stream " + hex(handle),
                 "the default stream (" << (r.kind == StreamKind::kPerThreadDefault ? "per-thread" : "handle 0")
                                        << ") was passed while " << desc
                                        << " is current: it would name that context's stream, which kilnrt (running "
                                           "in the primary context of cuda:"
                                        << device << ") cannot use. Pass a stream of the primary context "
                                        << "(torch.cuda.current_stream(), cudaStreamCreate), pop the user context, "
                                        << "or use host inputs / outputs (synchronous)");
  }
  CUcontext owner = nullptr;
  CUresult res = api.StreamGetCtx(handle, &owner);
  if (res != CUDA_SUCCESS) {
    KILNRT_THROW(kInvalidArgument, "stream " + hex(handle),
                 "stream " << hex(handle) << " is not a valid CUDA stream (" << driver_error_string(api, res)
                           << "): it was destroyed, or it is not a stream handle");
  }
  if (owner == primary) return ResolvedStream{handle, StreamKind::kExplicit};
  int other = -1;
  std::string desc = describe_foreign_context(api, owner, &other);
  if (other >= 0) {
    KILNRT_THROW(kInvalidArgument, "stream " + hex(handle),
                 "stream belongs to another CUDA context ("
                     << desc << ") but the engine runs on cuda:" << device << ": pass a stream of cuda:" << device
                     << " (torch.cuda.current_stream(" << device << ") / torch.cuda.Stream(device=" << device << "))");
  }
  KILNRT_THROW(kInvalidArgument, "stream " + hex(handle),
               "stream belongs to another CUDA context (" << desc << "), not the primary context of cuda:" << device
                                                          << " that kilnrt uses: create the stream with the CUDA "
                                                             "runtime or PyTorch (torch.cuda.Stream()), or in pycuda "
                                                             "use device.retain_primary_context() instead of "
                                                             "make_context()");
}

}  // namespace kilnrt::cuda
