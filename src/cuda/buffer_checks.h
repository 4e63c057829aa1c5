// Checks of caller-provided device buffers beyond what foreign_checks.h validates (kind, device, context): the
// pointer's alignment and, where the driver can tell, that the allocation holds the bytes the tensor needs.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>

namespace kilnrt::cuda {

// Throws kInvalidArgument naming `what` when `ptr` is not a multiple of `alignment` (the tensor's element size), or
// when `ptr` lies in a cuMemAlloc / cudaMalloc allocation (legacy_ipc: the legacy-IPC capable kind) that ends less
// than `bytes` after it ("buffer too small"). Memory from stream-ordered pools and VMM allocators (torch's expandable
// segments) has no single allocation range the driver reports reliably: only its alignment is checked. The attributes
// come from foreign_checks.h's query_pointer_attributes (one driver query, check_device_tensor); no driver call here.
void check_buffer_range(const void* ptr, size_t bytes, size_t alignment, bool legacy_ipc, CUdeviceptr range_start,
                        size_t range_size, const std::string& what);

}  // namespace kilnrt::cuda
