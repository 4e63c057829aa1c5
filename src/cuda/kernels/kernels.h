// Host entry points of kilnrt's own CUDA kernels (src/backends/cuda/kernels/*.cu). Plain C++: no CUDA headers, so
// layers include it freely. Each launcher enqueues on `stream` and returns the launch status (cudaError_t as int,
// 0 = success) read with cudaGetLastError right after its own launch — kilnrt's cudart is linked statically, so
// that error state belongs to kilnrt alone. Tensors are contiguous row-major unless strides are passed.
#pragma once
#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace kilnrt::cuda::kernels {

using StreamT = CUstream_st*;
constexpr int kMaxDims = 8;

// Shape + strides in elements for up to kMaxDims dims (strides may be 0 for broadcasting or negative for steps).
struct Strided {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};  // destination strides
  int64_t in_strides[kMaxDims] = {};   // source strides
  int64_t out_offset = 0, in_offset = 0;
};

// dst[out_offset + sum(i_d*out_strides_d)] = src[in_offset + sum(i_d*in_strides_d)] for every index of dims.
// Covers Transpose, Slice, Split, Concat, Expand. elem_size: 1, 2, 4 or 8.
int strided_copy(void* dst, const void* src, const Strided& s, size_t elem_size, StreamT stream);

// Elementwise float unary ops (a, b: op parameters such as alpha/beta/min/max).
enum class UnaryOp : int {
  kIdentity, kRelu, kSigmoid, kTanh, kHardSigmoid, kHardSwish, kErf, kExp, kLog, kSqrt, kNeg, kAbs, kReciprocal,
  kLeakyRelu, kElu, kSoftplus, kFloor, kCeil, kClip, kGeluErf, kGeluTanh, kSin, kCos, kRound, kSign, kSelu,
  kSoftsign, kMish, kThresholdedRelu, kCelu
};
// dt: 0 float32, 1 float16, 2 bfloat16 (16-bit storage, float32 math / accumulation).
int unary(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream);
// float64 storage and math for a subset of the ops (unary_f64_op: Identity Exp Log Sqrt Neg Abs Reciprocal Floor Ceil
// Relu Sin Cos Tanh Sigmoid); other ops return cudaErrorInvalidValue.
bool unary_f64_op(UnaryOp op);
int unary_f64(UnaryOp op, const double* x, double* y, int64_t n, StreamT stream);

// Broadcasting binary ops. Output shape `dims`; a_strides / b_strides give 0 on broadcast dims.
enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kMod, kFmod, kPRelu,
                            kEqual, kLess, kGreater, kLessEq, kGreaterEq, kAnd, kOr, kXor };
struct Broadcast3 {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t s0[kMaxDims] = {}, s1[kMaxDims] = {}, s2[kMaxDims] = {};
  bool contiguous_same = false;  // all operands have the output's shape (fast path)
};
// dtype codes: 0 float32, 1 int64, 2 int32, 3 bool (uint8), 4 float16, 5 bfloat16 (float32 math), 6 int8, 7 uint8,
// 8 int16, 9 uint16, 10 uint32, 11 uint64, 12 float64. Comparisons write bool; arithmetic writes the input type
// (integers wrap; integer Div / Mod by zero give 0; Mod: sign of the divisor, Fmod: sign of the dividend).
int binary(BinaryOp op, int dtype, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
           StreamT stream);
// Pow with a base / exponent of different dtypes (binary's codes): double math, y has the base's dtype (integer
// results truncate toward zero, like the CPU reference).
int pow_mixed(int base_dtype, const void* a, int exp_dtype, const void* b, void* y, int64_t n, const Broadcast3& bc,
              StreamT stream);
// y = cond ? x : z with broadcasting (s0 cond, s1 x, s2 z); elem_size of x/z: 1, 2, 4, 8.
int where(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc,
          size_t elem_size, StreamT stream);
// float32 <-> 16-bit float (bf16 = 0: IEEE half, 1: bfloat16), round to nearest even; NaN / inf preserved, values
// beyond the 16-bit range become inf (half). For the 16-bit GEMM operands of --fp16 / --bf16 engines.
int f32_to_16(const float* x, void* y, int64_t n, int bf16, StreamT stream);
int f16_to_32(const void* x, float* y, int64_t n, int bf16, StreamT stream);
// Cast between dtype codes 0 float32, 1 int64, 2 int32, 3 bool, 4 int8, 5 uint8, 6 float64, 7 float16, 8 bfloat16.
int cast(const void* x, int from, void* y, int to, int64_t n, StreamT stream);
// Gather along an axis: x viewed as [outer, axis_dim, inner], indices (int64, n_idx of them, negative allowed)
// -> y [outer, n_idx, inner]. Out-of-range indices write zeros and set *bad (device int, may be null) to 1.
int gather(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
           int64_t inner, size_t elem_size, StreamT stream);

// 2-D convolution geometry over NCHW (grouped, strided, dilated, padded): the direct convolution
// (ops/nn/conv/cuda/conv2d_direct_kernels.h) and the convolution kernels take it.
struct Conv2d {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

// IsNaN (is_nan) / IsInf (detect_positive / detect_negative) of float16 / bfloat16 / float64 storage (binary's codes
// 4, 5, 12) -> bool.
int nan_inf(int dtype, const void* x, uint8_t* y, int64_t n, bool is_nan, bool detect_positive, bool detect_negative,
            StreamT stream);

const char* error_string(int status);

}  // namespace kilnrt::cuda::kernels
