// The fused convolution epilogue (see conv_kernels.h): one pass over the convolution's output adding the bias and
// the residual and applying the activation. 16-bit storage is loaded four elements at a time when the pointers are
// 8-byte aligned and a group of four lies within one channel (NCHW, inner % 4 == 0) or is four channels (NHWC,
// inner == 1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/kernels/conv_activation.cuh"
#include "ops/nn/conv/cuda/conv_kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;

using storage16::from_f;  // storage16.cuh
using storage16::to_f;

using conv_act::activate;  // conv_activation.cuh

template <class T>
__global__ void epilogue_scalar(T* y, const T* bias, const T* z, int64_t n, int64_t inner, int64_t channels, int act,
                                float a, float b) {
  KILNRT_GRID_LOOP(i, n) {
    float v = to_f(y[i]);
    if (bias) v += to_f(bias[(i / inner) % channels]);
    if (z) v += to_f(z[i]);
    y[i] = from_f<T>(activate(act, v, a, b));
  }
}

// Four 16-bit elements per step (8 bytes): one channel (inner % 4 == 0) or four consecutive channels (inner == 1).
template <class T>
__global__ void epilogue_vec4(T* y, const T* bias, const T* z, int64_t n4, int64_t inner, int64_t channels, int act,
                              float a, float b) {
  KILNRT_GRID_LOOP(i, n4) {
    uint2 yv = reinterpret_cast<uint2*>(y)[i];
    T* ye = reinterpret_cast<T*>(&yv);
    float bv[4] = {0.f, 0.f, 0.f, 0.f};
    if (bias) {
      if (inner == 1) {
#pragma unroll
        for (int k = 0; k < 4; ++k) bv[k] = to_f(bias[(i * 4 + k) % channels]);
      } else {
        bv[0] = bv[1] = bv[2] = bv[3] = to_f(bias[(i * 4 / inner) % channels]);
      }
    }
    uint2 zv = make_uint2(0, 0);
    if (z) zv = reinterpret_cast<const uint2*>(z)[i];
    const T* ze = reinterpret_cast<const T*>(&zv);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float v = to_f(ye[k]) + bv[k];
      if (z) v += to_f(ze[k]);
      ye[k] = from_f<T>(activate(act, v, a, b));
    }
    reinterpret_cast<uint2*>(y)[i] = yv;
  }
}

template <class T>
int launch(void* y, const void* bias, const void* z, int64_t n, int64_t inner, int64_t channels, int act, float a,
           float b, cudaStream_t s) {
  if (n <= 0) return 0;
  T* yp = static_cast<T*>(y);
  const T* bp = static_cast<const T*>(bias);
  const T* zp = static_cast<const T*>(z);
  const bool aligned = (reinterpret_cast<uintptr_t>(y) % 8 == 0) && (reinterpret_cast<uintptr_t>(z) % 8 == 0);
  if (sizeof(T) == 2 && (inner % 4 == 0 || inner == 1) && n % 4 == 0 && aligned) {
    epilogue_vec4<T><<<blocks_for(n / 4), kThreads, 0, s>>>(yp, bp, zp, n / 4, inner, channels, act, a, b);
  } else {
    epilogue_scalar<T><<<blocks_for(n), kThreads, 0, s>>>(yp, bp, zp, n, inner, channels, act, a, b);
  }
  return launch_common::launch_status();
}

}  // namespace

int conv_epilogue(int dt, void* y, const void* bias, const void* z, int64_t n, int64_t inner, int64_t channels, int act,
                  float a, float b, StreamT stream) {
  if (inner < 1 || channels < 1) return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: return launch<float>(y, bias, z, n, inner, channels, act, a, b, s);
    case 1: return launch<__half>(y, bias, z, n, inner, channels, act, a, b, s);
    case 2: return launch<__nv_bfloat16>(y, bias, z, n, inner, channels, act, a, b, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
