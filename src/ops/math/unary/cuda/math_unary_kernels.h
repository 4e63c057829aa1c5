// Host entry point of the float32 math unary kernel (math_unary.cu): Tan ... Atanh, Shrink, IsNaN / IsInf of
// float32, Not of bool, and a scale (Mean's 1/N). Plain C++ like kernels.h; returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Float32 unary math (y float32) and predicates (IsNaN / IsInf write bool), Not (bool -> bool).
enum class XUnary : int {
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kShrink,
  kScale,
  kIsNaN,
  kIsInf,
  kNot
};
// a, b: Shrink's lambd / bias, kScale's factor (a); IsInf: a != 0 detects +inf, b != 0 detects -inf.
int xunary(XUnary op, const void* x, void* y, int64_t n, float a, float b, StreamT stream);

}  // namespace kilnrt::cuda::kernels
