// ScatterElements / ScatterND (with reductions, atomic compare-and-swap) and GatherND kernels
// (scatter_gather_kernels.h): one thread per update / output element.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/index_ops/cuda/scatter_gather_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/dims_index.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
using namespace dims_index;

template <typename T>
__device__ __forceinline__ T combine(int red, T a, T b) {
  switch (red) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return a > b ? a : b;
    case 4: return a < b ? a : b;
    default: return b;
  }
}

__device__ void apply_update(float* p, float v, int red) {
  if (red == 0) {
    *p = v;
    return;
  }
  unsigned int* a = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *a, assumed;
  do {
    assumed = old;
    const float nv = combine<float>(red, __uint_as_float(assumed), v);
    old = atomicCAS(a, assumed, __float_as_uint(nv));
  } while (old != assumed);
}
__device__ void apply_update(int64_t* p, int64_t v, int red) {
  if (red == 0) {
    *p = v;
    return;
  }
  unsigned long long* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *a, assumed;
  do {
    assumed = old;
    const int64_t nv = combine<int64_t>(red, static_cast<int64_t>(assumed), v);
    old = atomicCAS(a, assumed, static_cast<unsigned long long>(nv));
  } while (old != assumed);
}

template <typename T>
__global__ void scatter_elements_kernel(T* y, Dims ys, const void* idx, bool is64, const T* upd, Dims us, int axis,
                                        int red, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t j = load_index(idx, is64, i);
    if (j < 0) j += ys.d[axis];
    if (j < 0 || j >= ys.d[axis]) continue;
    apply_update(y + remap_offset(ys, us, i, axis, j), upd[i], red);
  }
}

template <typename T>
__global__ void scatter_nd_kernel(T* y, Dims ys, const int64_t* idx, int k, const T* upd, int64_t slice, int red,
                                  int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t u = i / slice, e = i % slice;
    int64_t off = 0;
    bool ok = true;
    for (int d = 0; d < k; ++d) {
      int64_t c = idx[u * k + d];
      if (c < 0) c += ys.d[d];
      ok &= c >= 0 && c < ys.d[d];
      off = off * ys.d[d] + c;
    }
    if (!ok) continue;
    apply_update(y + off * slice + e, upd[i], red);
  }
}

template <typename T>
__global__ void gather_nd_kernel(const T* x, Dims xs, const int64_t* idx, int k, int batch_dims, int64_t per_batch,
                                 int64_t slice, T* y, int64_t total) {
  int64_t batch_stride = 1;  // elements of x per batch block
  for (int d = batch_dims; d < xs.rank; ++d) batch_stride *= xs.d[d];
  KILNRT_GRID_LOOP(i, total) {
    const int64_t t = i / slice, e = i % slice;
    const int64_t b = t / per_batch;
    int64_t off = 0;
    bool ok = true;
    for (int d = 0; d < k; ++d) {
      const int64_t dim = xs.d[batch_dims + d];
      int64_t c = idx[t * k + d];
      if (c < 0) c += dim;
      ok &= c >= 0 && c < dim;
      off = off * dim + c;
    }
    y[i] = ok ? x[b * batch_stride + off * slice + e] : T(0);
  }
}

}  // namespace

int scatter_elements(void* y, const Dims& y_shape, const void* idx, bool idx_is_64, const void* updates,
                     const Dims& upd_shape, int axis, int reduction, int dtype, StreamT stream) {
  const int64_t total = numel(upd_shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  if (dtype == 0)
    scatter_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<float*>(y), y_shape, idx, idx_is_64,
                                                        static_cast<const float*>(updates), upd_shape, axis, reduction,
                                                        total);
  else if (dtype == 1)
    scatter_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(y), y_shape, idx, idx_is_64,
                                                        static_cast<const int64_t*>(updates), upd_shape, axis,
                                                        reduction, total);
  else
    return static_cast<int>(cudaErrorInvalidValue);
  return launch_status();
}

int scatter_nd(void* y, const Dims& y_shape, const int64_t* idx, int64_t n_upd, int k, const void* updates,
               int64_t slice, int reduction, int dtype, StreamT stream) {
  const int64_t total = n_upd * slice;
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  if (dtype == 0)
    scatter_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<float*>(y), y_shape, idx, k,
                                                  static_cast<const float*>(updates), slice, reduction, total);
  else if (dtype == 1)
    scatter_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(y), y_shape, idx, k,
                                                  static_cast<const int64_t*>(updates), slice, reduction, total);
  else
    return static_cast<int>(cudaErrorInvalidValue);
  return launch_status();
}

int gather_nd(const void* x, const Dims& x_shape, const int64_t* idx, int64_t n_idx, int k, int batch_dims,
              int64_t n_batch, int64_t slice, void* y, size_t elem_size, StreamT stream) {
  const int64_t total = n_idx * slice;
  if (total <= 0) return 0;
  const int64_t per_batch = n_batch > 0 ? n_idx / n_batch : n_idx;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_GND(S)                                                                                             \
  case S:                                                                                                         \
    gather_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), x_shape, idx, k, batch_dims, \
                                                 per_batch, slice, static_cast<Bytes<S>::T*>(y), total);          \
    break;
    KILNRT_GND(1)
    KILNRT_GND(2) KILNRT_GND(4) KILNRT_GND(8)
#undef KILNRT_GND
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
