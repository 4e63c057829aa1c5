// A 1x1 convolution on 16-bit NHWC storage as one tensor-core GEMM with its epilogue fused (pointwise_conv.cu):
//   y[m, n] = act(sum_c x[m, c] * w[n, c] + bias[n] + z[m, n])
// x [M, C], w [N, C], z and y [M, N], all row-major (an NHWC activation is [N*H*W, C]); float32 accumulation and
// epilogue math, one rounding to the storage type at the end. It replaces cuBLASLt + a separate activation pass
// for the expand / project convolutions of MobileNet / EfficientNet blocks (SiLU and hard swish have no cuBLASLt
// epilogue), where the pass costs as much as the GEMM. Plain C++ like kernels.h.
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

struct PointwiseConvArgs {
  int dt = 1;                  // 1 float16, 2 bfloat16
  const void* x = nullptr;     // [m, c]
  const void* w = nullptr;     // [n, c]
  const void* bias = nullptr;  // [n] or null
  const void* z = nullptr;     // [m, n] or null (residual)
  void* y = nullptr;           // [m, n]
  int64_t m = 0;
  int64_t c = 0;
  int64_t n = 0;
  int act = 0;  // ops::nn::FusedActivation's code (conv_kernels.h: conv_epilogue)
  float a = 0.f, b = 0.f;
};

// Tile variants (the tactic index, conv_tactics.h "pw-mma:<v>"): 0 = 128 x 64 output tile, 1 = 64 x 64 (more CTAs
// for small M), 2 = 128 x 96 (whole 192-byte rows for 96 / 192 / 288 channels). A 128 x 128 tile measured 2x slower
// on every EfficientNet-B0 shape (H100) and was dropped.
constexpr int kPointwiseConvVariants = 3;

// True when the kernel takes these arguments: dt 1 or 2, c and n multiples of 8, x / w / z / y 16-byte aligned,
// bias 4-byte aligned, fewer than 2^31 output tiles.
bool pointwise_conv_applies(const PointwiseConvArgs& a);
// Enqueues the GEMM + epilogue on `stream`; returns the launch status (cudaErrorInvalidValue when it does not apply).
int pointwise_conv(const PointwiseConvArgs& a, int variant, StreamT stream);

}  // namespace kilnrt::cuda::kernels
