// Host entry points of the ScatterElements / ScatterND and GatherND kernels (scatter_gather.cu). Plain C++ like
// kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/dims.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Reductions of ScatterElements / ScatterND: 0 none, 1 add, 2 mul, 3 max, 4 min. dtype codes: 0 float32, 1 int64.
// y must already hold a copy of the data; updates are applied in place.
int scatter_elements(void* y, const Dims& y_shape, const void* idx, bool idx_is_64, const void* updates,
                     const Dims& upd_shape, int axis, int reduction, int dtype, StreamT stream);
// ScatterND: idx int64 [n_upd, k]; each update slice has `slice` elements; y_shape is the data's shape.
int scatter_nd(void* y, const Dims& y_shape, const int64_t* idx, int64_t n_upd, int k, const void* updates,
               int64_t slice, int reduction, int dtype, StreamT stream);
// GatherND: idx int64 [n_idx, k] (the leading batch_dims of the index shape flattened into n_batch blocks of
// n_idx / n_batch tuples), x_shape the data's shape; each gathered slice has `slice` elements.
int gather_nd(const void* x, const Dims& x_shape, const int64_t* idx, int64_t n_idx, int k, int batch_dims,
              int64_t n_batch, int64_t slice, void* y, size_t elem_size, StreamT stream);

}  // namespace kilnrt::cuda::kernels
