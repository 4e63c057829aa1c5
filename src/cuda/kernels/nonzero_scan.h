// Host entry points of the ordered non-zero scan kernels (nonzero_scan.cu), shared by the data-dependent layers of
// NonZero and Compress (shape/index_ops) and Unique (shape/unique), whose output size depends on the input's values.
// The scan computes the exact output size on the device (an ordered single-block scan of the non-zero flags), copies
// the count to the host and synchronises `stream` — the one sync of the layer, a "sync point" of the plan
// (docs/cuda-backend.md, "Data-dependent shapes"). Plain C++ like kernels.h; each launcher returns the CUDA status
// (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::dd {

constexpr int kMaxRank = 8;

// Flat indices of the non-zero elements of x (n elements of elem_size bytes; float kinds: `is_float` with
// elem_size 2 (fp16 / bf16), 4 or 8, where -0.0 counts as zero) in increasing order, written to flat[0..count);
// *count_dev receives the count on the device and *count_host on the host (after the stream sync).
int nonzero_flat(const void* x, int64_t n, size_t elem_size, bool is_float, int64_t* flat, int64_t* count_dev,
                 int64_t* count_host, StreamT stream);

// NonZero's [rank, count] coordinates from the flat indices of an array of `dims` (row-major).
int nonzero_coords(const int64_t* flat, int64_t count, const int64_t* dims, int rank, int64_t* y, StreamT stream);

// Compress: y[o, j, i] = x[o, idx[j], i] for [outer, axis_dim, inner] x and `count` selected indices.
int gather_axis(const void* x, const int64_t* idx, int64_t count, int64_t outer, int64_t axis_dim, int64_t inner,
                size_t elem_size, void* y, StreamT stream);

}  // namespace kilnrt::cuda::kernels::dd
