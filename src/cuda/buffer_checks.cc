// Alignment and allocation-size checks of caller buffers (see buffer_checks.h).
#include "cuda/buffer_checks.h"

#include <cstdint>

#include "core/check.h"

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

}  // namespace kilnrt::cuda
