// A device-to-device byte copy on a stream (BitCast, the identity of an empty-axes bool reduction). Plain C++ like
// kernels.h; returns the status (0 = success).
#pragma once
#include <cstddef>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// dst = src, nbytes bytes (device to device, on the stream).
int copy_bytes(void* dst, const void* src, size_t nbytes, StreamT stream);

}  // namespace kilnrt::cuda::kernels
