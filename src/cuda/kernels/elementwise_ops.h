// Operation codes of the elementwise kernels: UnaryOp (unary, the fast path and the shared per-element math) and
// BinaryOp (binary, comparisons / logic, the fast path). Plain C++ like kernels.h: layers of several op folders
// (unary, binary, logic, fused GEMM epilogues) name them.
#pragma once

namespace kilnrt::cuda::kernels {

// Elementwise float unary ops (a, b: op parameters such as alpha/beta/min/max).
enum class UnaryOp : int {
  kIdentity,
  kRelu,
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kHardSwish,
  kErf,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kLeakyRelu,
  kElu,
  kSoftplus,
  kFloor,
  kCeil,
  kClip,
  kGeluErf,
  kGeluTanh,
  kSin,
  kCos,
  kRound,
  kSign,
  kSelu,
  kSoftsign,
  kMish,
  kThresholdedRelu,
  kCelu
};

// Broadcasting binary ops: arithmetic, then (from kEqual on) comparisons and logic that write bool.
enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kMod,
  kFmod,
  kPRelu,
  kEqual,
  kLess,
  kGreater,
  kLessEq,
  kGreaterEq,
  kAnd,
  kOr,
  kXor
};

}  // namespace kilnrt::cuda::kernels
