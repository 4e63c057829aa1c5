// The CumProd kernel (cumprod_kernels.h), in its CPU reference's arithmetic (double accumulation in the reference's
// order, the same float roundings), so that results match it to the last bit or nearly (FMA contraction and the device
// exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/reduce/arg_cumsum/cuda/cumprod_kernels.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- CumProd: one thread per line along the axis
// -----------------------------------------------------------------------
struct CumDims {
  int rank = 0;
  int64_t d[kMaxNormDims] = {};
};

template <typename T>
__device__ __forceinline__ T mul_wrap(T acc, T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
  else
    return acc * v;
}

// T: storage, A: accumulator (double for floats, int64 for integers, as the CPU reference).
template <typename T, typename A>
__global__ void cumprod_kernel(const T* x, T* y, const void* axis_dev, bool axis_is_64, CumDims s, bool exclusive,
                               bool reverse) {
  int64_t axis = axis_is_64 ? *static_cast<const int64_t*>(axis_dev) : *static_cast<const int32_t*>(axis_dev);
  if (axis < 0) axis += s.rank;
  if (axis < 0 || axis >= s.rank) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s.d[d];
  for (int d = static_cast<int>(axis) + 1; d < s.rank; ++d) inner *= s.d[d];
  const int64_t dim = s.d[axis];
  KILNRT_GRID_LOOP(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const int64_t base = o * dim * inner + i;
    A acc = A(1);
    for (int64_t st = 0; st < dim; ++st) {
      const int64_t k = reverse ? dim - 1 - st : st;
      const int64_t off = base + k * inner;
      const A val = static_cast<A>(x[off]);
      if (exclusive) {
        y[off] = static_cast<T>(acc);
        acc = mul_wrap<A>(acc, val);
      } else {
        acc = mul_wrap<A>(acc, val);
        y[off] = static_cast<T>(acc);
      }
    }
  }
}

}  // namespace

int cumprod(const void* x, void* y, const void* axis_dev, bool axis_is_64, int rank, const int64_t* dims,
            bool exclusive, bool reverse, int dtype, StreamT stream) {
  if (rank < 1 || rank > kMaxNormDims) return static_cast<int>(cudaErrorInvalidValue);
  CumDims s;
  s.rank = rank;
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= (s.d[d] = dims[d]);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (dtype) {
#define KILNRT_CUMPROD(C, T, A)                                                                              \
  case C:                                                                                                    \
    cumprod_kernel<T, A><<<g, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), axis_dev, \
                                                     axis_is_64, s, exclusive, reverse);                     \
    break;
    KILNRT_CUMPROD(0, float, double)
    KILNRT_CUMPROD(1, int64_t, int64_t) KILNRT_CUMPROD(2, int32_t, int64_t) KILNRT_CUMPROD(6, double, double)
#undef KILNRT_CUMPROD
        default : return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::linatt
