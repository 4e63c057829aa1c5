// Fast path of kernels::strided_copy (Transpose / Slice / Concat / Split / Expand), planned on the host by
// strided_copy_plan.h: merged dims, 32-bit index math (the generic kernel divides in 64 bits per dim per element),
// 16-byte vectors along contiguous aligned innermost runs; true transposes (the destination's innermost dim strided
// in the source) as 32x32 shared-memory tiles.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/gather_plan.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/strided_copy_fast.h"
#include "cuda/kernels/strided_copy_plan.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// Unit offsets from strided_copy_unit (strided_copy_plan.h, the function the CPU test checks).
template <typename T>
__global__ void strided_copy32_kernel(T* dst, const T* src, Strided32 s, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int32_t o, in;
    strided_copy_unit(s, i, &o, &in);
    dst[o] = src[in];
  }
}

template <typename T>
int launch32(void* dst, const void* src, const Strided32& s, uint32_t n, cudaStream_t st) {
  strided_copy32_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(static_cast<T*>(dst), static_cast<const T*>(src), s, n);
  return launch_status();
}

// One 32x32 tile of one batch per block (blockDim 32 x 8): read along a (source-contiguous), write along b
// (destination-contiguous). blockIdx.x: tile, blockIdx.y (+ k * gridDim.y): batch.
constexpr int kTile = 32, kTileRows = 8;

template <typename T>
__global__ void tiled_transpose_kernel(T* dst, const T* src, TiledTransposePlan p, uint32_t tiles_a) {
  __shared__ T tile[kTile][kTile + 1];
  const uint32_t a0 = (blockIdx.x % tiles_a) * kTile, b0 = (blockIdx.x / tiles_a) * kTile;
  for (uint32_t batch = blockIdx.y; batch < p.batches; batch += gridDim.y) {
    int32_t out_base, in_base;
    tiled_transpose_batch(p.batch, batch, &out_base, &in_base);
    const uint32_t a = a0 + threadIdx.x;
#pragma unroll
    for (int j = 0; j < kTile; j += kTileRows) {
      const uint32_t b = b0 + threadIdx.y + j;
      if (a < p.a && b < p.b)
        tile[threadIdx.y + j][threadIdx.x] = src[in_base + int32_t(a) + int32_t(b) * p.in_b_stride];
    }
    __syncthreads();
    const uint32_t b = b0 + threadIdx.x;
#pragma unroll
    for (int j = 0; j < kTile; j += kTileRows) {
      const uint32_t a2 = a0 + threadIdx.y + j;
      if (a2 < p.a && b < p.b)
        dst[out_base + int32_t(a2) * p.out_a_stride + int32_t(b)] = tile[threadIdx.x][threadIdx.y + j];
    }
    __syncthreads();
  }
}

template <typename T>
int launch_tiled(void* dst, const void* src, const TiledTransposePlan& p, cudaStream_t st) {
  const uint32_t tiles_a = (p.a + kTile - 1) / kTile, tiles_b = (p.b + kTile - 1) / kTile;
  const uint64_t tiles = uint64_t(tiles_a) * tiles_b;
  if (tiles > 0x7fffffffu) return -1;
  const dim3 grid(static_cast<unsigned>(tiles), p.batches < 65535u ? p.batches : 65535u);
  tiled_transpose_kernel<T>
      <<<grid, dim3(kTile, kTileRows), 0, st>>>(static_cast<T*>(dst), static_cast<const T*>(src), p, tiles_a);
  return launch_status();
}

// Gather: one unit per thread, index read as int64 (negative wraps once, out of range writes zeros, as the generic
// kernel does).
template <typename T>
__global__ void gather_fast_kernel(const T* x, const int64_t* idx, T* y, GatherPlan p) {
  for (uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < p.units; u += gridDim.x * blockDim.x) {
    int64_t k = idx[gather_index_position(p, u)];
    if (k < 0) k += p.axis_dim;
    T v{};
    if (k >= 0 && k < int64_t(p.axis_dim)) v = x[gather_source_unit(p, u, uint32_t(k))];
    y[u] = v;
  }
}

template <typename T>
int launch_gather(const void* x, const int64_t* idx, void* y, const GatherPlan& p, cudaStream_t st) {
  gather_fast_kernel<T><<<blocks_for(p.units), kThreads, 0, st>>>(static_cast<const T*>(x), idx, static_cast<T*>(y), p);
  return launch_status();
}

}  // namespace

int gather_fast(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
                int64_t inner, size_t elem_size, StreamT stream) {
  GatherPlan p;
  if (!plan_gather(outer, axis_dim, n_idx, inner, elem_size, reinterpret_cast<uintptr_t>(x),
                   reinterpret_cast<uintptr_t>(y), &p))
    return -1;
  if (p.units == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (p.unit) {
    case 1: return launch_gather<uint8_t>(x, indices, y, p, st);
    case 2: return launch_gather<uint16_t>(x, indices, y, p, st);
    case 4: return launch_gather<uint32_t>(x, indices, y, p, st);
    case 8: return launch_gather<uint64_t>(x, indices, y, p, st);
    default: return launch_gather<uint4>(x, indices, y, p, st);
  }
}

int strided_copy_fast(void* dst, const void* src, const Strided& in, size_t elem_size, StreamT stream) {
  StridedCopyPlan p;
  if (!plan_strided_copy(in, elem_size, reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), &p))
    return -1;
  if (p.n == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  if (p.tiled) {
    switch (p.unit) {
      case 1: return launch_tiled<uint8_t>(dst, src, p.t, st);
      case 2: return launch_tiled<uint16_t>(dst, src, p.t, st);
      case 4: return launch_tiled<uint32_t>(dst, src, p.t, st);
      default: return launch_tiled<uint64_t>(dst, src, p.t, st);
    }
  }
  switch (p.unit) {
    case 1: return launch32<uint8_t>(dst, src, p.s, p.n, st);
    case 2: return launch32<uint16_t>(dst, src, p.s, p.n, st);
    case 4: return launch32<uint32_t>(dst, src, p.s, p.n, st);
    case 8: return launch32<uint64_t>(dst, src, p.s, p.n, st);
    default: return launch32<uint4>(dst, src, p.s, p.n, st);
  }
}

}  // namespace kilnrt::cuda::kernels
