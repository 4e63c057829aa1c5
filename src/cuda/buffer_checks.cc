// Alignment and allocation-size checks of caller buffers (see buffer_checks.h).
#include "cuda/buffer_checks.h"

#include <cstdint>

#include "core/check.h"
#include "cuda/driver_api.h"

namespace kilnrt::cuda {

void check_buffer_range(const void* ptr, size_t bytes, size_t alignment, bool legacy_ipc, CUdeviceptr range_start,
                        size_t range_size, const std::string& what) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  KILNRT_CHECK(alignment == 0 || address % alignment == 0, kInvalidArgument, what,
               what << " at " << ptr << " is not aligned to " << alignment
                    << " bytes (its element size): pass a tensor that starts on an element boundary");
  // Only plain cuMemAlloc / cudaMalloc memory (the kind that is legacy-IPC capable) has a trustworthy range.
  if (bytes == 0 || !legacy_ipc || range_size == 0 || address < range_start) return;
  const uint64_t offset = address - range_start;
  KILNRT_CHECK(offset <= range_size && bytes <= range_size - offset, kInvalidArgument, what,
               what << " needs " << bytes << " bytes but its allocation ends "
                    << (offset <= range_size ? range_size - offset : 0)
                    << " bytes after the pointer: the buffer is too small for this shape");
}

void check_device_buffer(const void* ptr, size_t bytes, size_t alignment, const std::string& what) {
  const auto address = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  const DriverApi& api = driver_api();
  bool legacy_ipc = false;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (bytes > 0 && api.PointerGetAttribute && api.MemGetAddressRange) {  // absent from a test's fake table
    int legacy = 0;
    legacy_ipc = api.PointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, address) ==
                     CUDA_SUCCESS && legacy;
    if (legacy_ipc && api.MemGetAddressRange(&base, &size, address) != CUDA_SUCCESS) size = 0;
  }
  check_buffer_range(ptr, bytes, alignment, legacy_ipc, base, size, what);
}

}  // namespace kilnrt::cuda
