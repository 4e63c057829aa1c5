// Fast path of kernels::strided_copy (Transpose / Slice / Concat / Split / Expand): on the host, size-1 dims are
// dropped and dims contiguous in both source and destination are merged; when every index fits 32 bits the kernel
// uses 32-bit index math (the generic kernel divides in 64 bits per dim per element), and when the innermost run is
// contiguous and 16-byte aligned on both sides, elements move 16 bytes at a time.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "backends/cuda/kernels/launch_common.cuh"
#include "backends/cuda/kernels/strided_copy_fast.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

struct Strided32 {
  int rank = 0;
  uint32_t dims[kMaxDims] = {};
  int32_t out_strides[kMaxDims] = {}, in_strides[kMaxDims] = {};
  int32_t out_offset = 0, in_offset = 0;
};

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
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) return -1;
  // Drop size-1 dims, merge dims contiguous on both sides (outermost first).
  Strided s;
  for (int d = 0; d < in.rank; ++d) {
    if (in.dims[d] == 1) continue;
    if (in.dims[d] == 0) return 0;
    if (s.rank > 0) {
      const int p = s.rank - 1;
      if (s.out_strides[p] == in.out_strides[d] * in.dims[d] && s.in_strides[p] == in.in_strides[d] * in.dims[d]) {
        s.dims[p] *= in.dims[d];
        s.out_strides[p] = in.out_strides[d];
        s.in_strides[p] = in.in_strides[d];
        continue;
      }
    }
    s.dims[s.rank] = in.dims[d];
    s.out_strides[s.rank] = in.out_strides[d];
    s.in_strides[s.rank] = in.in_strides[d];
    ++s.rank;
  }
  s.out_offset = in.out_offset;
  s.in_offset = in.in_offset;
  if (s.rank == 0) {  // one element
    s.rank = 1;
    s.dims[0] = 1;
    s.out_strides[0] = s.in_strides[0] = 1;
  }
  // 16-byte vectors along a contiguous innermost run.
  size_t es = elem_size;
  const int last = s.rank - 1;
  const int64_t v = static_cast<int64_t>(16 / elem_size);
  bool vec = elem_size < 16 && s.out_strides[last] == 1 && s.in_strides[last] == 1 && s.dims[last] % v == 0 &&
             s.out_offset % v == 0 && s.in_offset % v == 0 && (reinterpret_cast<uintptr_t>(dst) & 15u) == 0 &&
             (reinterpret_cast<uintptr_t>(src) & 15u) == 0;
  for (int d = 0; d < last && vec; ++d) vec = s.out_strides[d] % v == 0 && s.in_strides[d] % v == 0;
  if (vec) {
    s.dims[last] /= v;
    for (int d = 0; d < last; ++d) {
      s.out_strides[d] /= v;
      s.in_strides[d] /= v;
    }
    s.out_offset /= v;
    s.in_offset /= v;
    es = 16;
  }
  // 32-bit indices: element count and every reachable offset below 2^31.
  int64_t n = 1, out_hi = s.out_offset, in_hi = s.in_offset, out_lo = s.out_offset, in_lo = s.in_offset;
  for (int d = 0; d < s.rank; ++d) {
    n *= s.dims[d];
    const int64_t so = (s.dims[d] - 1) * s.out_strides[d], si = (s.dims[d] - 1) * s.in_strides[d];
    (so > 0 ? out_hi : out_lo) += so;
    (si > 0 ? in_hi : in_lo) += si;
  }
  constexpr int64_t kMax = 2147483647LL;
  if (n > kMax || out_hi > kMax || in_hi > kMax || out_lo < -kMax || in_lo < -kMax) return -1;
  Strided32 t;
  t.rank = s.rank;
  for (int d = 0; d < s.rank; ++d) {
    t.dims[d] = static_cast<uint32_t>(s.dims[d]);
    t.out_strides[d] = static_cast<int32_t>(s.out_strides[d]);
    t.in_strides[d] = static_cast<int32_t>(s.in_strides[d]);
  }
  t.out_offset = static_cast<int32_t>(s.out_offset);
  t.in_offset = static_cast<int32_t>(s.in_offset);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  const uint32_t n32 = static_cast<uint32_t>(n);
  switch (es) {
    case 1: return launch32<uint8_t>(dst, src, t, n32, st);
    case 2: return launch32<uint16_t>(dst, src, t, n32, st);
    case 4: return launch32<uint32_t>(dst, src, t, n32, st);
    case 8: return launch32<uint64_t>(dst, src, t, n32, st);
    default: return launch32<uint4>(dst, src, t, n32, st);
  }
}

}  // namespace kilnrt::cuda::kernels
