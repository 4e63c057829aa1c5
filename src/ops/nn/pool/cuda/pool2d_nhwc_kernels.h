// The two kernels behind pool2d_nhwc (pool2d_kernels.h; pool2d_nhwc.cu), for tests and benchmarks. Plain C++.
#pragma once
#include <cstdint>

#include "ops/nn/pool/cuda/pool2d_kernels.h"

namespace kilnrt::cuda::kernels {

// 8 channels per thread, `tx` (1, 2 or 4) outputs along x per thread: needs 16-bit storage (dt 1 float16,
// 2 bfloat16), C % 8 == 0, 16-byte aligned x and y, and sizes within 32-bit index math (pool2d_nhwc_vec8_applies);
// cudaErrorInvalidValue otherwise.
bool pool2d_nhwc_vec8_applies(int dt, const void* x, const void* y, const Pool2d& p);
int pool2d_nhwc_vec8(int dt, const void* x, void* y, const Pool2d& p, int tx, StreamT stream);
// One thread per output element: any C, alignment and dtype (0 float32, 1 float16, 2 bfloat16).
int pool2d_nhwc_scalar(int dt, const void* x, void* y, const Pool2d& p, StreamT stream);
// False with KILNRT_CUDA_POOL_VEC=0 (read once): pool2d_nhwc then always takes the scalar kernel.
bool pool2d_nhwc_vec_enabled();

}  // namespace kilnrt::cuda::kernels
