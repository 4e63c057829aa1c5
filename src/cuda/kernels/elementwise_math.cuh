// Per-element float math shared by the generic (unary.cu) and fast (elementwise_fast.cu) elementwise kernels,
// so both paths give bit-identical results: 16-bit storage is computed in float32 and rounded once on store.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/kernels/elementwise_ops.h"

namespace kilnrt::cuda::kernels::elementwise_math {

__device__ __forceinline__ float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }
__device__ __forceinline__ float softplus_f(float x) { return x > 20.f ? x : log1pf(expf(x)); }

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float unary_math(UnaryOp op, float v, float a, float b) {
  switch (op) {
    case UnaryOp::kIdentity: return v;
    case UnaryOp::kRelu: return v < 0.f ? 0.f : v;
    case UnaryOp::kSigmoid: return v >= 0.f ? 1.f / (1.f + expf(-v)) : expf(v) / (1.f + expf(v));
    case UnaryOp::kTanh: return tanhf(v);
    case UnaryOp::kHardSigmoid: return clamp01(a * v + b);
    case UnaryOp::kHardSwish: return v * clamp01(v * (1.f / 6.f) + 0.5f);
    case UnaryOp::kErf: return erff(v);
    case UnaryOp::kExp: return expf(v);
    case UnaryOp::kLog: return logf(v);
    case UnaryOp::kSqrt: return sqrtf(v);
    case UnaryOp::kNeg: return -v;
    case UnaryOp::kAbs: return fabsf(v);
    case UnaryOp::kReciprocal: return 1.f / v;
    case UnaryOp::kLeakyRelu: return v < 0.f ? a * v : v;
    case UnaryOp::kElu: return v < 0.f ? a * expm1f(v) : v;
    case UnaryOp::kSoftplus: return softplus_f(v);
    case UnaryOp::kFloor: return floorf(v);
    case UnaryOp::kCeil: return ceilf(v);
    case UnaryOp::kClip: {  // min(max(v, lo), hi) as ONNX defines it: lo > hi gives hi; NaN stays NaN
      const float t = v < a ? a : v;
      return t > b ? b : t;
    }
    case UnaryOp::kGeluErf: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    case UnaryOp::kGeluTanh: return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case UnaryOp::kSin: return sinf(v);
    case UnaryOp::kCos: return cosf(v);
    case UnaryOp::kRound: return nearbyintf(v);
    case UnaryOp::kSign: return v > 0.f ? 1.f : (v < 0.f ? -1.f : v);
    case UnaryOp::kSelu: return v <= 0.f ? b * (a * expf(v) - a) : b * v;
    case UnaryOp::kSoftsign: return v / (1.f + fabsf(v));
    case UnaryOp::kMish: return v * tanhf(softplus_f(v));
    case UnaryOp::kThresholdedRelu: return v > a ? v : (v != v ? v : 0.f);
    case UnaryOp::kCelu: return v > 0.f ? v : a * expm1f(v / a);
    default: return v;
  }
}

// Arithmetic binary ops (op < kEqual) in float32: Pow / Mod (numpy: sign of the divisor) / Fmod included.
__device__ __forceinline__ float binary_math(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::kAdd: return x + y;
    case BinaryOp::kSub: return x - y;
    case BinaryOp::kMul: return x * y;
    case BinaryOp::kDiv: return x / y;
    case BinaryOp::kPow: return powf(x, y);
    case BinaryOp::kMax: return (x != x || x > y) ? x : y;
    case BinaryOp::kMin: return (x != x || x < y) ? x : y;
    case BinaryOp::kPRelu: return x < 0.f ? x * y : x;
    case BinaryOp::kFmod: return fmodf(x, y);
    case BinaryOp::kMod: {
      float r = fmodf(x, y);
      if (r != 0.f && ((r < 0.f) != (y < 0.f))) r += y;
      return r;
    }
    default: return x;
  }
}

}  // namespace kilnrt::cuda::kernels::elementwise_math
