#include "cuda/buffer_checks.h"

#include <cstdint>

#include "core/check.h"
#include "cuda/driver_api.h"

namespace kilnrt::cuda {

void check_device_buffer(const void* ptr, size_t bytes, size_t alignment, const std::string& what) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  KILNRT_CHECK(alignment == 0 || address % alignment == 0, kInvalidArgument, what,
               what << " at " << ptr << " is not aligned to " << alignment
                    << " bytes (its element size): pass a tensor that starts on an element boundary");
  if (bytes == 0) return;
  const DriverApi& api = driver_api();
  if (!api.PointerGetAttribute || !api.MemGetAddressRange) return;  // a test's fake table
  // Only plain cuMemAlloc / cudaMalloc memory (the kind that is legacy-IPC capable) has a trustworthy range.
  int legacy = 0;
  if (api.PointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                              static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS || !legacy)
    return;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (api.MemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS) return;
  const uint64_t offset = address - base;
  KILNRT_CHECK(offset <= size && bytes <= size - offset, kInvalidArgument, what,
               what << " needs " << bytes << " bytes but its allocation ends " << (offset <= size ? size - offset : 0)
                    << " bytes after the pointer: the buffer is too small for this shape");
}

}  // namespace kilnrt::cuda
