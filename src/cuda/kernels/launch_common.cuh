// Launch helpers shared by kilnrt's own CUDA kernels (included by the .cu files of this folder only).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace kilnrt::cuda::kernels::launch_common {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (at least 1, capped: the loop covers the rest).
inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535LL * 32 ? 65535LL * 32 : b));
}

// The status of the launch just made. kilnrt's cudart is static, so this error state is kilnrt's alone: reading it
// clears nothing that belongs to another library in the process.
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

// Multiprocessors of the current device (cached per device ordinal; 132, an H100's count, when it cannot be read).
inline int sm_count() {
  constexpr int kDevices = 64;
  static std::atomic<int> cached[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 132;
  if (dev < kDevices) {
    const int c = cached[dev].load(std::memory_order_relaxed);
    if (c > 0) return c;
  }
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) n = 132;
  if (dev < kDevices) cached[dev].store(n, std::memory_order_relaxed);
  return n;
}

// Whether p may be read / written with 16-byte vector accesses (null counts as aligned).
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// An unsigned integer type of kSize bytes, for kernels that only move elements.
template <int kSize>
struct Bytes;
template <>
struct Bytes<1> {
  using T = uint8_t;
};
template <>
struct Bytes<2> {
  using T = uint16_t;
};
template <>
struct Bytes<4> {
  using T = uint32_t;
};
template <>
struct Bytes<8> {
  using T = uint64_t;
};

}  // namespace kilnrt::cuda::kernels::launch_common

#define KILNRT_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
