// The activations of the fused convolution epilogue (conv_kernels.h: conv_epilogue's act codes), shared by the
// epilogue pass (ops/nn/conv/cuda/conv_epilogue.cu) and the kernels that apply it themselves (the conv kernels of
// ops/nn/conv/cuda, the squeeze-excite kernel). Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

namespace kilnrt::cuda::kernels::conv_act {

// act: ops::nn::FusedActivation's code (0 none, 1 relu, 2 clip(a, b), 3 leaky relu(a), 4 hard sigmoid(a, b),
// 5 hard swish, 6 sigmoid, 7 silu, 8 gelu, 9 gelu tanh); float32 math.
__device__ __forceinline__ float activate(int act, float x, float a, float b) {
  switch (act) {
    case 1: return x < 0.f ? 0.f : x;  // NaN propagates
    case 2: return x < a ? a : (x > b ? b : x);
    case 3: return x < 0.f ? a * x : x;
    case 4: return fminf(1.f, fmaxf(0.f, a * x + b));
    case 5: return x * fminf(1.f, fmaxf(0.f, x * (1.f / 6.f) + 0.5f));
    case 6: return 1.f / (1.f + expf(-x));
    case 7: return x / (1.f + expf(-x));
    case 8: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case 9: return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    default: return x;
  }
}

// activate() with the exponential and the division of Sigmoid / SiLU in fast math (__expf, __fdividef: ~2 ulp of
// float32, far below the 16-bit rounding that follows); for kernels whose activation count makes the accurate forms
// the bottleneck (the NHWC depthwise tile kernel, the pointwise-conv GEMM).
__device__ __forceinline__ float activate_fast(int act, float x, float a, float b) {
  switch (act) {
    case 6: return __fdividef(1.f, 1.f + __expf(-x));
    case 7: return __fdividef(x, 1.f + __expf(-x));
    default: return activate(act, x, a, b);
  }
}

}  // namespace kilnrt::cuda::kernels::conv_act
