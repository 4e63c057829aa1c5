// CK(call): the standalone probes under bench/ stop at the first failed CUDA runtime call, printing the error with the
// file and line (variadic: a call may hold template commas). Shared by gemm_probe_common.cuh's probes,
// attention_wgmma_probe.cu and layernorm_probe.cu.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(...)                                                                      \
  do {                                                                               \
    const cudaError_t e_ = static_cast<cudaError_t>(__VA_ARGS__);                    \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)
