// Elementwise and data-movement kernels: strided copy (transpose/slice/concat/expand), unary, broadcasting binary,
// where, cast, gather. Few templates on purpose: CI compiles this on 2 cores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/elementwise_fast.h"
#include "backends/cuda/kernels/elementwise_math.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"
#include "cuda/kernels/strided_copy_fast.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void strided_copy_kernel(T* dst, const T* src, Strided s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, o = s.out_offset, in = s.in_offset;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % s.dims[d];
      rem /= s.dims[d];
      o += idx * s.out_strides[d];
      in += idx * s.in_strides[d];
    }
    dst[o] = src[in];
  }
}

__device__ __forceinline__ float ldf(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ldf(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ldf(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void stf(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void stf(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void stf(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// Generic unary: only for more than 2^31 elements (unary_fast covers the rest).
template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    stf(y, i, elementwise_math::unary_math(op, ldf(x, i), a, b));
}

// float64 storage and math for the unary ops unary_f64_op accepts.
__global__ void unary_f64_kernel(UnaryOp op, const double* x, double* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double v = x[i];
    double r;
    switch (op) {
      case UnaryOp::kExp: r = exp(v); break;
      case UnaryOp::kLog: r = log(v); break;
      case UnaryOp::kSqrt: r = sqrt(v); break;
      case UnaryOp::kNeg: r = -v; break;
      case UnaryOp::kAbs: r = fabs(v); break;
      case UnaryOp::kReciprocal: r = 1.0 / v; break;
      case UnaryOp::kFloor: r = floor(v); break;
      case UnaryOp::kCeil: r = ceil(v); break;
      case UnaryOp::kRelu: r = v < 0.0 ? 0.0 : v; break;
      case UnaryOp::kSin: r = sin(v); break;
      case UnaryOp::kCos: r = cos(v); break;
      case UnaryOp::kTanh: r = tanh(v); break;
      case UnaryOp::kSigmoid: r = 1.0 / (1.0 + exp(-v)); break;
      default: r = v; break;
    }
    y[i] = r;
  }
}

__device__ __forceinline__ void offsets3(const Broadcast3& bc, int64_t i, int64_t& o0, int64_t& o1, int64_t& o2) {
  if (bc.contiguous_same) { o0 = o1 = o2 = i; return; }
  o0 = o1 = o2 = 0;
  int64_t rem = i;
  for (int d = bc.rank - 1; d >= 0; --d) {
    const int64_t idx = rem % bc.dims[d];
    rem /= bc.dims[d];
    o0 += idx * bc.s0[d];
    o1 += idx * bc.s1[d];
    o2 += idx * bc.s2[d];
  }
}

// pow in double; integer exponents up to 64 by repeated squaring, so integer results (< 2^53) are exact before the
// truncation to an integer output (the device pow may be an ulp off).
__device__ __forceinline__ double pow_exact(double x, double e) {
  if (e != floor(e) || fabs(e) > 64.0) return pow(x, e);
  unsigned k = static_cast<unsigned>(fabs(e));
  double r = 1.0, b = x;
  while (k) {
    if (k & 1u) r *= b;
    b *= b;
    k >>= 1;
  }
  return e < 0.0 ? 1.0 / r : r;
}

template <typename T>
__device__ __forceinline__ T arith(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::kAdd: return x + y;
    case BinaryOp::kSub: return x - y;
    case BinaryOp::kMul: return x * y;
    case BinaryOp::kDiv:
      if constexpr (std::is_integral<T>::value) return y == T(0) ? T(0) : T(x / y);
      else return x / y;
    case BinaryOp::kMax: return (x != x || x > y) ? x : y;
    case BinaryOp::kMin: return (x != x || x < y) ? x : y;
    case BinaryOp::kPRelu:
      if constexpr (std::is_signed<T>::value || !std::is_integral<T>::value) return x < T(0) ? T(x * y) : x;
      else return x;
    case BinaryOp::kPow:
      if constexpr (std::is_integral<T>::value) return T(pow_exact(static_cast<double>(x), static_cast<double>(y)));
      else return T(pow(static_cast<double>(x), static_cast<double>(y)));
    case BinaryOp::kMod:
    case BinaryOp::kFmod:
      if constexpr (std::is_integral<T>::value) {  // integer zero divisor: 0 (the CPU reference refuses it)
        if (y == T(0)) return T(0);
        T r = T(x % y);
        if constexpr (std::is_signed<T>::value)
          if (op == BinaryOp::kMod && r != T(0) && ((r < T(0)) != (y < T(0)))) r = T(r + y);
        return r;
      } else {
        T r = fmod(x, y);
        if (op == BinaryOp::kMod && r != T(0) && ((r < T(0)) != (y < T(0)))) r += y;
        return r;
      }
    default: return x;
  }
}

// Loads / stores of binary's dtype codes through double (mixed-dtype Pow only).
__device__ __forceinline__ double load_num(const void* p, int t, int64_t i) {
  switch (t) {
    case 0: return static_cast<const float*>(p)[i];
    case 1: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case 2: return static_cast<const int32_t*>(p)[i];
    case 3: case 7: return static_cast<const uint8_t*>(p)[i];
    case 4: return __half2float(static_cast<const __half*>(p)[i]);
    case 5: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case 6: return static_cast<const int8_t*>(p)[i];
    case 8: return static_cast<const int16_t*>(p)[i];
    case 9: return static_cast<const uint16_t*>(p)[i];
    case 10: return static_cast<const uint32_t*>(p)[i];
    case 11: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    default: return static_cast<const double*>(p)[i];
  }
}
__device__ __forceinline__ void store_num(void* p, int t, int64_t i, double v) {
  switch (t) {
    case 0: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case 1: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case 2: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case 3: case 7: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case 4: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case 5: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    case 6: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case 8: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case 9: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case 10: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case 11: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    default: static_cast<double*>(p)[i] = v; break;
  }
}

// Pow with a base and an exponent of different dtypes: double math, the output has the base's dtype.
__global__ void pow_mixed_kernel(int ta, const void* a, int tb, const void* b, void* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oa, ob;
    offsets3(bc, i, oy, oa, ob);
    store_num(y, ta, oy, pow_exact(load_num(a, ta, oa), load_num(b, tb, ob)));
  }
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, void* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oa, ob;
    offsets3(bc, i, oy, oa, ob);
    const T x = a[oa], z = b[ob];
    if (op >= BinaryOp::kEqual) {
      bool r;
      switch (op) {
        case BinaryOp::kEqual: r = x == z; break;
        case BinaryOp::kLess: r = x < z; break;
        case BinaryOp::kGreater: r = x > z; break;
        case BinaryOp::kLessEq: r = x <= z; break;
        case BinaryOp::kGreaterEq: r = x >= z; break;
        case BinaryOp::kAnd: r = (x != T(0)) && (z != T(0)); break;
        case BinaryOp::kOr: r = (x != T(0)) || (z != T(0)); break;
        default: r = (x != T(0)) != (z != T(0)); break;
      }
      static_cast<uint8_t*>(y)[oy] = r ? 1 : 0;
    } else {
      static_cast<T*>(y)[oy] = arith<T>(op, x, z);
    }
  }
}

// 16-bit float storage: load -> float -> compute -> store (comparisons / logic write bool).
template <typename T>
__global__ void binary_16_kernel(BinaryOp op, const T* a, const T* b, void* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oa, ob;
    offsets3(bc, i, oy, oa, ob);
    const float x = ldf(a, oa), z = ldf(b, ob);
    if (op >= BinaryOp::kEqual) {
      bool r;
      switch (op) {
        case BinaryOp::kEqual: r = x == z; break;
        case BinaryOp::kLess: r = x < z; break;
        case BinaryOp::kGreater: r = x > z; break;
        case BinaryOp::kLessEq: r = x <= z; break;
        case BinaryOp::kGreaterEq: r = x >= z; break;
        case BinaryOp::kAnd: r = (x != 0.f) && (z != 0.f); break;
        case BinaryOp::kOr: r = (x != 0.f) || (z != 0.f); break;
        default: r = (x != 0.f) != (z != 0.f); break;
      }
      static_cast<uint8_t*>(y)[oy] = r ? 1 : 0;
      continue;
    }
    float r;
    if (op == BinaryOp::kPow) {
      r = powf(x, z);
    } else if (op == BinaryOp::kFmod || op == BinaryOp::kMod) {
      r = fmodf(x, z);
      if (op == BinaryOp::kMod && r != 0.f && ((r < 0.f) != (z < 0.f))) r += z;
    } else {
      r = arith<float>(op, x, z);
    }
    stf(static_cast<T*>(y), oy, r);
  }
}

__global__ void binary_f32_special(BinaryOp op, const float* a, const float* b, float* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oa, ob;
    offsets3(bc, i, oy, oa, ob);
    const float x = a[oa], z = b[ob];
    float r;
    if (op == BinaryOp::kPow) {
      r = powf(x, z);
    } else if (op == BinaryOp::kFmod) {
      r = fmodf(x, z);
    } else {  // kMod: numpy semantics, sign of the divisor
      r = fmodf(x, z);
      if (r != 0.f && ((r < 0.f) != (z < 0.f))) r += z;
    }
    y[oy] = r;
  }
}

template <typename T>
__global__ void where_kernel(const uint8_t* c, const T* x, const T* z, T* y, int64_t n, Broadcast3 bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oc, ox, oz;
    offsets3(bc, i, oc, ox, oz);
    y[i] = c[oc] ? x[ox] : z[oz];
  }
}

__device__ __forceinline__ double load_as_double(const void* p, int t, int64_t i) {
  switch (t) {
    case 0: return static_cast<const float*>(p)[i];
    case 1: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case 2: return static_cast<const int32_t*>(p)[i];
    case 3: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    case 4: return static_cast<const int8_t*>(p)[i];
    case 5: return static_cast<const uint8_t*>(p)[i];
    case 6: return static_cast<const double*>(p)[i];
    case 8: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return __half2float(static_cast<const __half*>(p)[i]);
  }
}

__device__ __forceinline__ int64_t to_int(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

__global__ void cast_kernel(const void* x, int from, void* y, int to, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (from == 1 && (to == 1 || to == 2 || to == 3 || to == 4 || to == 5)) {  // exact integer paths
      const int64_t v = static_cast<const int64_t*>(x)[i];
      switch (to) {
        case 1: static_cast<int64_t*>(y)[i] = v; break;
        case 2: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(v); break;
        case 3: static_cast<uint8_t*>(y)[i] = v != 0; break;
        case 4: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v); break;
        default: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v); break;
      }
      continue;
    }
    const double v = load_as_double(x, from, i);
    switch (to) {
      case 0: static_cast<float*>(y)[i] = static_cast<float>(v); break;
      case 1: static_cast<int64_t*>(y)[i] = to_int(v); break;
      case 2: static_cast<int32_t*>(y)[i] = static_cast<int32_t>(to_int(v)); break;
      case 3: static_cast<uint8_t*>(y)[i] = v != 0.0; break;
      case 4: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(to_int(v)); break;
      case 5: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(to_int(v)); break;
      case 6: static_cast<double*>(y)[i] = v; break;
      case 8: static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
      default: static_cast<__half*>(y)[i] = __float2half_rn(static_cast<float>(v)); break;
    }
  }
}

template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* idx, T* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
                              int64_t inner) {
  const int64_t n = outer * n_idx * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t in = i % inner;
    const int64_t j = (i / inner) % n_idx;
    const int64_t o = i / (inner * n_idx);
    int64_t k = idx[j];
    if (k < 0) k += axis_dim;
    y[i] = (k >= 0 && k < axis_dim) ? x[(o * axis_dim + k) * inner + in] : T(0);
  }
}

__global__ void broadcast_scale_kernel(const float* c, float* y, int64_t n, Broadcast3 bc, float beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oy, oc, unused;
    offsets3(bc, i, oy, oc, unused);
    y[oy] = beta * c[oc];
  }
}

}  // namespace

int strided_copy(void* dst, const void* src, const Strided& s, size_t elem_size, StreamT stream) {
  if (const int fast = strided_copy_fast(dst, src, s, elem_size, stream); fast >= 0) return fast;
  int64_t n = 1;
  for (int d = 0; d < s.rank; ++d) n *= s.dims[d];
  if (n == 0) return 0;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: strided_copy_kernel<uint8_t><<<g, kThreads, 0, st>>>((uint8_t*)dst, (const uint8_t*)src, s, n); break;
    case 2: strided_copy_kernel<uint16_t><<<g, kThreads, 0, st>>>((uint16_t*)dst, (const uint16_t*)src, s, n); break;
    case 4: strided_copy_kernel<uint32_t><<<g, kThreads, 0, st>>>((uint32_t*)dst, (const uint32_t*)src, s, n); break;
    case 8: strided_copy_kernel<uint64_t><<<g, kThreads, 0, st>>>((uint64_t*)dst, (const uint64_t*)src, s, n); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int unary(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream) {
  if (n == 0) return 0;
  if (const int fast = unary_fast(op, dt, x, y, n, a, b, stream); fast >= 0) return fast;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: unary_kernel<float><<<blocks_for(n), kThreads, 0, st>>>(op, (const float*)x, (float*)y, n, a, b); break;
    case 1: unary_kernel<__half><<<blocks_for(n), kThreads, 0, st>>>(op, (const __half*)x, (__half*)y, n, a, b); break;
    case 2:
      unary_kernel<__nv_bfloat16><<<blocks_for(n), kThreads, 0, st>>>(op, (const __nv_bfloat16*)x, (__nv_bfloat16*)y,
                                                                       n, a, b);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}
bool unary_f64_op(UnaryOp op) {
  switch (op) {
    case UnaryOp::kIdentity: case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kSqrt: case UnaryOp::kNeg:
    case UnaryOp::kAbs: case UnaryOp::kReciprocal: case UnaryOp::kFloor: case UnaryOp::kCeil: case UnaryOp::kRelu:
    case UnaryOp::kSin: case UnaryOp::kCos: case UnaryOp::kTanh: case UnaryOp::kSigmoid: return true;
    default: return false;
  }
}
int unary_f64(UnaryOp op, const double* x, double* y, int64_t n, StreamT stream) {
  if (n == 0) return 0;
  if (!unary_f64_op(op)) return static_cast<int>(cudaErrorInvalidValue);
  unary_f64_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(op, x, y, n);
  return launch_status();
}

int binary(BinaryOp op, int dtype, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
           StreamT stream) {
  if (n == 0) return 0;
  if (const int fast = binary_fast(op, dtype, a, b, y, n, bc, stream); fast >= 0) return fast;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  if (dtype == 0 && (op == BinaryOp::kPow || op == BinaryOp::kMod || op == BinaryOp::kFmod)) {
    binary_f32_special<<<g, kThreads, 0, st>>>(op, (const float*)a, (const float*)b, (float*)y, n, bc);
    return launch_status();
  }
  switch (dtype) {
    case 0: binary_kernel<float><<<g, kThreads, 0, st>>>(op, (const float*)a, (const float*)b, y, n, bc); break;
    case 1: binary_kernel<int64_t><<<g, kThreads, 0, st>>>(op, (const int64_t*)a, (const int64_t*)b, y, n, bc); break;
    case 2: binary_kernel<int32_t><<<g, kThreads, 0, st>>>(op, (const int32_t*)a, (const int32_t*)b, y, n, bc); break;
    case 3: case 7: binary_kernel<uint8_t><<<g, kThreads, 0, st>>>(op, (const uint8_t*)a, (const uint8_t*)b, y, n, bc); break;
    case 6: binary_kernel<int8_t><<<g, kThreads, 0, st>>>(op, (const int8_t*)a, (const int8_t*)b, y, n, bc); break;
    case 8: binary_kernel<int16_t><<<g, kThreads, 0, st>>>(op, (const int16_t*)a, (const int16_t*)b, y, n, bc); break;
    case 9: binary_kernel<uint16_t><<<g, kThreads, 0, st>>>(op, (const uint16_t*)a, (const uint16_t*)b, y, n, bc); break;
    case 10: binary_kernel<uint32_t><<<g, kThreads, 0, st>>>(op, (const uint32_t*)a, (const uint32_t*)b, y, n, bc); break;
    case 11: binary_kernel<uint64_t><<<g, kThreads, 0, st>>>(op, (const uint64_t*)a, (const uint64_t*)b, y, n, bc); break;
    case 12: binary_kernel<double><<<g, kThreads, 0, st>>>(op, (const double*)a, (const double*)b, y, n, bc); break;
    case 4: binary_16_kernel<__half><<<g, kThreads, 0, st>>>(op, (const __half*)a, (const __half*)b, y, n, bc); break;
    case 5:
      binary_16_kernel<__nv_bfloat16><<<g, kThreads, 0, st>>>(op, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, y,
                                                                n, bc);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int pow_mixed(int base_dtype, const void* a, int exp_dtype, const void* b, void* y, int64_t n, const Broadcast3& bc,
              StreamT stream) {
  if (n == 0) return 0;
  if (base_dtype < 0 || base_dtype > 12 || exp_dtype < 0 || exp_dtype > 12) return static_cast<int>(cudaErrorInvalidValue);
  pow_mixed_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(base_dtype, a, exp_dtype, b,
                                                                                          y, n, bc);
  return launch_status();
}

int where(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc,
          size_t elem_size, StreamT stream) {
  if (n == 0) return 0;
  if (const int fast = where_fast(cond, x, z, y, n, bc, elem_size, stream); fast >= 0) return fast;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: where_kernel<uint8_t><<<g, kThreads, 0, st>>>(cond, (const uint8_t*)x, (const uint8_t*)z, (uint8_t*)y, n, bc); break;
    case 2: where_kernel<uint16_t><<<g, kThreads, 0, st>>>(cond, (const uint16_t*)x, (const uint16_t*)z, (uint16_t*)y, n, bc); break;
    case 4: where_kernel<uint32_t><<<g, kThreads, 0, st>>>(cond, (const uint32_t*)x, (const uint32_t*)z, (uint32_t*)y, n, bc); break;
    case 8: where_kernel<uint64_t><<<g, kThreads, 0, st>>>(cond, (const uint64_t*)x, (const uint64_t*)z, (uint64_t*)y, n, bc); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int cast(const void* x, int from, void* y, int to, int64_t n, StreamT stream) {
  if (n == 0) return 0;
  // float32 <-> 16-bit floats: the direct conversion kernels (same rounding as the generic path's double detour,
  // which is exact for float32 sources), no per-element type switch.
  if (from == 0 && (to == 7 || to == 8)) return f32_to_16(static_cast<const float*>(x), y, n, to == 8, stream);
  if ((from == 7 || from == 8) && to == 0) return f16_to_32(x, static_cast<float*>(y), n, from == 8, stream);
  cast_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(x, from, y, to, n);
  return launch_status();
}

int gather(const void* x, const int64_t* indices, void* y, int64_t outer, int64_t axis_dim, int64_t n_idx,
           int64_t inner, size_t elem_size, StreamT stream) {
  const int64_t n = outer * n_idx * inner;
  if (n == 0) return 0;
  if (const int fast = gather_fast(x, indices, y, outer, axis_dim, n_idx, inner, elem_size, stream); fast >= 0)
    return fast;
  const unsigned g = blocks_for(n);
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: gather_kernel<uint8_t><<<g, kThreads, 0, st>>>((const uint8_t*)x, indices, (uint8_t*)y, outer, axis_dim, n_idx, inner); break;
    case 2: gather_kernel<uint16_t><<<g, kThreads, 0, st>>>((const uint16_t*)x, indices, (uint16_t*)y, outer, axis_dim, n_idx, inner); break;
    case 4: gather_kernel<uint32_t><<<g, kThreads, 0, st>>>((const uint32_t*)x, indices, (uint32_t*)y, outer, axis_dim, n_idx, inner); break;
    case 8: gather_kernel<uint64_t><<<g, kThreads, 0, st>>>((const uint64_t*)x, indices, (uint64_t*)y, outer, axis_dim, n_idx, inner); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int broadcast_scale_f32(const float* c, float* y, int64_t total, const Broadcast3& bc, float beta, StreamT stream) {
  if (total == 0) return 0;
  broadcast_scale_kernel<<<blocks_for(total), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(c, y, total, bc,
                                                                                                    beta);
  return launch_status();
}

const char* error_string(int status) { return cudaGetErrorString(static_cast<cudaError_t>(status)); }


namespace {
// float32 <-> 16-bit conversions of whole tensors (graph inputs / outputs of 16-bit engines, float32 islands). The
// vector kernels move 8 values per thread (two 16-byte float32 loads, one 16-byte 16-bit store, or the reverse) when
// both pointers are 16-byte aligned; the tail past the last multiple of 8, or misaligned pointers, take the scalar
// kernel. One thread per vector, no grid-stride loop: a 224x224 batch-32 image (4.8 M values) is 602 K threads.
using storage16::from_f;  // storage16.cuh
using storage16::to_f;

template <class H>
__global__ void f32_to_16_vec_kernel(const float4* __restrict__ x, uint4* __restrict__ y, int64_t nvec) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  const float4 a = x[2 * i], b = x[2 * i + 1];
  union { uint4 u; H h[8]; } o;
  o.h[0] = from_f<H>(a.x); o.h[1] = from_f<H>(a.y); o.h[2] = from_f<H>(a.z); o.h[3] = from_f<H>(a.w);
  o.h[4] = from_f<H>(b.x); o.h[5] = from_f<H>(b.y); o.h[6] = from_f<H>(b.z); o.h[7] = from_f<H>(b.w);
  y[i] = o.u;
}
template <class H>
__global__ void f16_to_32_vec_kernel(const uint4* __restrict__ x, float4* __restrict__ y, int64_t nvec) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= nvec) return;
  union { uint4 u; H h[8]; } v;
  v.u = x[i];
  y[2 * i] = make_float4(to_f(v.h[0]), to_f(v.h[1]), to_f(v.h[2]), to_f(v.h[3]));
  y[2 * i + 1] = make_float4(to_f(v.h[4]), to_f(v.h[5]), to_f(v.h[6]), to_f(v.h[7]));
}
__global__ void f32_to_16_kernel(const float* x, void* y, int64_t n, int bf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (bf16) static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(x[i]);
    else static_cast<__half*>(y)[i] = __float2half_rn(x[i]);
  }
}
__global__ void f16_to_32_kernel(const void* x, float* y, int64_t n, int bf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(x)[i]) : __half2float(static_cast<const __half*>(x)[i]);
}
unsigned conv_blocks(int64_t n) { const int64_t b = (n + 255) / 256; return static_cast<unsigned>(b < 65535 ? b : 65535); }
constexpr int64_t kMaxVecBlocks = 2147483647LL;
}  // namespace

int f32_to_16(const float* x, void* y, int64_t n, int bf16, StreamT stream) {
  if (n <= 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t done = 0;
  const int64_t nvec = n / 8, blocks = (nvec + 255) / 256;
  if (nvec > 0 && blocks <= kMaxVecBlocks && aligned16(x) && aligned16(y)) {
    if (bf16) f32_to_16_vec_kernel<__nv_bfloat16><<<unsigned(blocks), 256, 0, s>>>(
        reinterpret_cast<const float4*>(x), static_cast<uint4*>(y), nvec);
    else f32_to_16_vec_kernel<__half><<<unsigned(blocks), 256, 0, s>>>(reinterpret_cast<const float4*>(x),
                                                                       static_cast<uint4*>(y), nvec);
    done = nvec * 8;
  }
  if (done < n)
    f32_to_16_kernel<<<conv_blocks(n - done), 256, 0, s>>>(x + done, static_cast<char*>(y) + done * 2, n - done, bf16);
  return static_cast<int>(cudaGetLastError());
}
int f16_to_32(const void* x, float* y, int64_t n, int bf16, StreamT stream) {
  if (n <= 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int64_t done = 0;
  const int64_t nvec = n / 8, blocks = (nvec + 255) / 256;
  if (nvec > 0 && blocks <= kMaxVecBlocks && aligned16(x) && aligned16(y)) {
    if (bf16) f16_to_32_vec_kernel<__nv_bfloat16><<<unsigned(blocks), 256, 0, s>>>(static_cast<const uint4*>(x),
                                                                                  reinterpret_cast<float4*>(y), nvec);
    else f16_to_32_vec_kernel<__half><<<unsigned(blocks), 256, 0, s>>>(static_cast<const uint4*>(x),
                                                                       reinterpret_cast<float4*>(y), nvec);
    done = nvec * 8;
  }
  if (done < n)
    f16_to_32_kernel<<<conv_blocks(n - done), 256, 0, s>>>(static_cast<const char*>(x) + done * 2, y + done, n - done,
                                                          bf16);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kilnrt::cuda::kernels
