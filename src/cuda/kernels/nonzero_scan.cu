// Non-zero scan kernels (nonzero_scan.h): an ordered single-block scan for the non-zero flags (one block of 1024
// threads walks the input in tiles: warp ballots + a 32-entry block scan, so the indices come out in increasing
// order, as ONNX NonZero / Compress require), then plain grid-stride kernels that size nothing.
#include <cuda_runtime.h>

#include "cuda/kernels/nonzero_scan.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::dd {
namespace {

using launch_common::blocks_for;
using launch_common::Bytes;
using launch_common::kThreads;
using launch_common::launch_status;

constexpr int kScanThreads = 1024;

template <typename U>
__device__ bool nonzero_bits(U v, U value_mask) {
  return (v & value_mask) != 0;
}

// value_mask: all bits for integers / bool, all but the sign bit for floats (so -0.0 is zero, NaN is not).
template <typename U>
__global__ void scan_kernel(const U* x, int64_t n, U value_mask, int64_t* flat, int64_t* count) {
  __shared__ int64_t warp_base[32];
  __shared__ int64_t base;
  __shared__ int64_t tile_total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  for (int64_t start = 0; start < n; start += blockDim.x) {
    const int64_t i = start + threadIdx.x;
    const bool hit = i < n && nonzero_bits(x[i], value_mask);
    const unsigned mask = __ballot_sync(0xffffffffu, hit);
    const int before = __popc(mask & ((1u << lane) - 1u));
    if (lane == 0) warp_base[warp] = __popc(mask);
    __syncthreads();
    if (threadIdx.x == 0) {
      int64_t acc = 0;
      for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) {
        const int64_t c = warp_base[w];
        warp_base[w] = acc;
        acc += c;
      }
      tile_total = acc;
    }
    __syncthreads();
    if (hit) flat[base + warp_base[warp] + before] = i;
    __syncthreads();
    if (threadIdx.x == 0) base += tile_total;
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = base;
}

struct Dims {
  int64_t d[kMaxRank];
};

__global__ void coords_kernel(const int64_t* flat, int64_t count, Dims dims, int rank, int64_t* y) {
  KILNRT_GRID_LOOP(j, count) {
    int64_t rem = flat[j];
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank) continue;
      y[d * count + j] = rem % dims.d[d];
      rem /= dims.d[d];
    }
  }
}

template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* idx, int64_t count, int64_t outer, int64_t axis_dim,
                              int64_t inner, T* y) {
  const int64_t total = outer * count * inner;
  KILNRT_GRID_LOOP(k, total) {
    const int64_t i = k % inner;
    const int64_t j = (k / inner) % count;
    const int64_t o = k / (inner * count);
    y[k] = x[(o * axis_dim + idx[j]) * inner + i];
  }
}

template <typename U>
int scan(const void* x, int64_t n, U value_mask, int64_t* flat, int64_t* count_dev, StreamT stream) {
  scan_kernel<U><<<1, kScanThreads, 0, stream>>>(static_cast<const U*>(x), n, value_mask, flat, count_dev);
  return launch_status();
}

}  // namespace

int nonzero_flat(const void* x, int64_t n, size_t elem_size, bool is_float, int64_t* flat, int64_t* count_dev,
                 int64_t* count_host, StreamT stream) {
  int status = 0;
  switch (elem_size) {
    case 1: status = scan<uint8_t>(x, n, 0xffu, flat, count_dev, stream); break;
    case 2: status = scan<uint16_t>(x, n, is_float ? 0x7fffu : 0xffffu, flat, count_dev, stream); break;
    case 4: status = scan<uint32_t>(x, n, is_float ? 0x7fffffffu : 0xffffffffu, flat, count_dev, stream); break;
    case 8: status = scan<uint64_t>(x, n, is_float ? 0x7fffffffffffffffull : ~0ull, flat, count_dev, stream); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  if (status != 0) return status;
  // The sync point: the host needs the count to size the output (and everything after it).
  status = static_cast<int>(cudaMemcpyAsync(count_host, count_dev, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  if (status != 0) return status;
  return static_cast<int>(cudaStreamSynchronize(stream));
}

int nonzero_coords(const int64_t* flat, int64_t count, const int64_t* dims, int rank, int64_t* y, StreamT stream) {
  if (rank < 1 || rank > kMaxRank) return static_cast<int>(cudaErrorInvalidValue);
  if (count == 0) return 0;
  Dims d{};
  for (int i = 0; i < rank; ++i) d.d[i] = dims[i];
  coords_kernel<<<blocks_for(count), kThreads, 0, stream>>>(flat, count, d, rank, y);
  return launch_status();
}

int gather_axis(const void* x, const int64_t* idx, int64_t count, int64_t outer, int64_t axis_dim, int64_t inner,
                size_t elem_size, void* y, StreamT stream) {
  const int64_t total = outer * count * inner;
  if (total == 0) return 0;
  switch (elem_size) {
#define KILNRT_DD_GATHER(n)                                                                                    \
  case n:                                                                                                      \
    gather_kernel<Bytes<n>::T><<<blocks_for(total), kThreads, 0, stream>>>(                                    \
        static_cast<const Bytes<n>::T*>(x), idx, count, outer, axis_dim, inner, static_cast<Bytes<n>::T*>(y)); \
    break;
    KILNRT_DD_GATHER(1)
    KILNRT_DD_GATHER(2)
    KILNRT_DD_GATHER(4)
    KILNRT_DD_GATHER(8)
#undef KILNRT_DD_GATHER
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::dd
