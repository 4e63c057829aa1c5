// kernels::strided_copy (kernels.h): the data movement of Transpose, Slice, Split, Concat, Expand and the executor's
// copies. The planned fast path (strided_copy_fast.cu) takes most calls; this generic kernel the rest.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/strided_copy_fast.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void strided_copy_kernel(T* dst, const T* src, Strided s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, o = s.out_offset, in = s.in_offset;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % s.dims[d];
      rem /= s.dims[d];
      o += idx * s.out_strides[d];
      in += idx * s.in_strides[d];
    }
    dst[o] = src[in];
  }
}

}  // namespace

int strided_copy(void* dst, const void* src, const Strided& s, size_t elem_size, StreamT stream) {
  if (const int fast = strided_copy_fast(dst, src, s, elem_size, stream); fast >= 0) return fast;
  int64_t n = 1;
  for (int d = 0; d < s.rank; ++d) n *= s.dims[d];
  if (n == 0) return 0;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: strided_copy_kernel<uint8_t><<<g, kThreads, 0, st>>>((uint8_t*)dst, (const uint8_t*)src, s, n); break;
    case 2: strided_copy_kernel<uint16_t><<<g, kThreads, 0, st>>>((uint16_t*)dst, (const uint16_t*)src, s, n); break;
    case 4: strided_copy_kernel<uint32_t><<<g, kThreads, 0, st>>>((uint32_t*)dst, (const uint32_t*)src, s, n); break;
    case 8: strided_copy_kernel<uint64_t><<<g, kThreads, 0, st>>>((uint64_t*)dst, (const uint64_t*)src, s, n); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
