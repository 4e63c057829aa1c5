// Host entry point of the TensorScatter kernel (tensor_scatter.cu). It follows the CPU reference
// (src/ops/shape/tensor_scatter/tensor_scatter.cc) in the order of its sums and its float / double roundings; one
// thread per output element (a gather: no atomics, results do not depend on scheduling). Plain C++ like kernels.h; the
// launcher returns the launch status (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::geom {

// ---- TensorScatter (any element size 1/2/4/8)
// --------------------------------------------------------------------------- cache / y viewed as [batch, prefix,
// max_len, inner], update as [batch, prefix, len, inner]. y = cache, except that y[b, p, pos] = update[b, p, s] where
// pos = write_indices[b] + s (circular: modulo max_len). write_indices (int64 [batch] on the device, null = zeros) is
// read by the kernel; in linear mode positions past the cache are not written (the CPU reference refuses them: see the
// layer).
struct ScatterGeom {
  int64_t batch = 0, prefix = 1, max_len = 0, len = 0, inner = 1;
  bool circular = false;
};
int tensor_scatter(const void* cache, const void* update, const int64_t* write_indices, void* y, size_t elem_size,
                   const ScatterGeom& g, StreamT stream);

}  // namespace kilnrt::cuda::kernels::geom
