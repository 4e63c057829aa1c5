// Fast path of kernels::strided_copy (Transpose / Slice / Concat / Split / Expand), planned on the host by
// strided_copy_plan.h: merged dims, 32-bit index math (the generic kernel divides in 64 bits per dim per element),
// 16-byte vectors along contiguous aligned innermost runs.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/strided_copy_fast.h"
#include "backends/cuda/kernels/strided_copy_plan.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void strided_copy32_kernel(T* dst, const T* src, Strided32 s, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t rem = i;
    int32_t o = s.out_offset, in = s.in_offset;
    for (int d = s.rank - 1; d > 0; --d) {
      const uint32_t q = rem / s.dims[d];
      const uint32_t idx = rem - q * s.dims[d];
      rem = q;
      o += int32_t(idx) * s.out_strides[d];
      in += int32_t(idx) * s.in_strides[d];
    }
    o += int32_t(rem) * s.out_strides[0];
    in += int32_t(rem) * s.in_strides[0];
    dst[o] = src[in];
  }
}

template <typename T>
int launch32(void* dst, const void* src, const Strided32& s, uint32_t n, cudaStream_t st) {
  strided_copy32_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(static_cast<T*>(dst), static_cast<const T*>(src), s, n);
  return launch_status();
}

}  // namespace

int strided_copy_fast(void* dst, const void* src, const Strided& in, size_t elem_size, StreamT stream) {
  StridedCopyPlan p;
  if (!plan_strided_copy(in, elem_size, reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), &p))
    return -1;
  if (p.n == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (p.unit) {
    case 1: return launch32<uint8_t>(dst, src, p.s, p.n, st);
    case 2: return launch32<uint16_t>(dst, src, p.s, p.n, st);
    case 4: return launch32<uint32_t>(dst, src, p.s, p.n, st);
    case 8: return launch32<uint64_t>(dst, src, p.s, p.n, st);
    default: return launch32<uint4>(dst, src, p.s, p.n, st);
  }
}

}  // namespace kilnrt::cuda::kernels
