// Host entry point of the MaxPool kernel with the Indices output or on 8-bit integers (max_pool_indices.cu).
// Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::maxpool {

// ---- MaxPool over 1-D..3-D (geometry padded to 3 dims with leading 1s, like ops::nn::Geometry3)
// -----------------------
struct Pool3 {
  int64_t planes = 0;  // n * c
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};  // begin pads
};
// x / y dtype: 0 float32, 1 int8, 2 uint8. indices (int64, may be null): flat offsets into x, row major
// (column_major false) or column major over the spatial dims. A window without an input element gives -inf (float)
// or the dtype's lowest value (8-bit) and index 0 — as the CPU reference.
int max_pool3(int dt, const void* x, void* y, int64_t* indices, bool column_major, const Pool3& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels::maxpool
