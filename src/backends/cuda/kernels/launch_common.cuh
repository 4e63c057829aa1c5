// Launch helpers shared by kilnrt's own CUDA kernels (included by the .cu files of this folder only).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/env_switch.h"

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

// ---- Programmatic dependent launch (Hopper and newer) ---------------------------------------------------------------
// A kernel launched with launch_pdl() may be scheduled as soon as the kernel before it on the stream has finished
// executing, before that kernel's completion is processed and its memory flushed: the launch latency between two
// dependent kernels overlaps the tail of the first (in CUDA graphs too: stream capture records a programmatic edge).
// Such a kernel must call wait_prior_grid() before it touches memory the previous kernels write or read (it returns
// once they are complete and their writes visible); work on constant data (weights) may come first. Without the
// attribute (older GPUs, KILNRT_PDL=0) the wait is a no-op and the launch an ordinary one.
__device__ __forceinline__ void wait_prior_grid() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// True when the current device is sm_90+ and KILNRT_PDL is not "0" (answers cached per device).
inline bool pdl_enabled() {
  static const bool env_off = env_switched_off("KILNRT_PDL");
  if (env_off) return false;
  constexpr int kMaxDevices = 64;
  static signed char known[kMaxDevices] = {};  // 0 unknown, 1 yes, -1 no (a benign race: every writer agrees)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return false;
  if (known[dev] == 0) {
    int major = 0;
    known[dev] = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9
                     ? 1
                     : -1;
  }
  return known[dev] > 0;
}

// kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream serialization allowed (see above).
template <class... Params, class... Args>
int launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // kilnrt's own (static) runtime state: clear what the failed launch left
    return static_cast<int>(e);
  }
  return launch_status();
}

// An unsigned integer type of kSize bytes, for kernels that only move elements.
template <int kSize> struct Bytes;
template <> struct Bytes<1> { using T = uint8_t; };
template <> struct Bytes<2> { using T = uint16_t; };
template <> struct Bytes<4> { using T = uint32_t; };
template <> struct Bytes<8> { using T = uint64_t; };

}  // namespace kilnrt::cuda::kernels::launch_common

#define KILNRT_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
