// Broadcasting binary kernels (binary_kernels.h): arithmetic, comparisons and logic of every binary dtype code
// (the float fast path in elementwise_fast.cu first), and Pow with a base / exponent of different dtypes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/kernels/elementwise_fast.h"
#include "ops/math/binary/cuda/binary_kernels.h"
#include "cuda/kernels/elementwise_access.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

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
      if constexpr (std::is_integral<T>::value)
        return y == T(0) ? T(0) : T(x / y);
      else
        return x / y;
    case BinaryOp::kMax: return (x != x || x > y) ? x : y;
    case BinaryOp::kMin: return (x != x || x < y) ? x : y;
    case BinaryOp::kPRelu:
      if constexpr (std::is_signed<T>::value || !std::is_integral<T>::value)
        return x < T(0) ? T(x * y) : x;
      else
        return x;
    case BinaryOp::kPow:
      if constexpr (std::is_integral<T>::value)
        return T(pow_exact(static_cast<double>(x), static_cast<double>(y)));
      else
        return T(pow(static_cast<double>(x), static_cast<double>(y)));
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
    case 3:
    case 7: return static_cast<const uint8_t*>(p)[i];
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
    case 3:
    case 7: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
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

}  // namespace

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
    case 3:
    case 7: binary_kernel<uint8_t><<<g, kThreads, 0, st>>>(op, (const uint8_t*)a, (const uint8_t*)b, y, n, bc); break;
    case 6: binary_kernel<int8_t><<<g, kThreads, 0, st>>>(op, (const int8_t*)a, (const int8_t*)b, y, n, bc); break;
    case 8: binary_kernel<int16_t><<<g, kThreads, 0, st>>>(op, (const int16_t*)a, (const int16_t*)b, y, n, bc); break;
    case 9:
      binary_kernel<uint16_t><<<g, kThreads, 0, st>>>(op, (const uint16_t*)a, (const uint16_t*)b, y, n, bc);
      break;
    case 10:
      binary_kernel<uint32_t><<<g, kThreads, 0, st>>>(op, (const uint32_t*)a, (const uint32_t*)b, y, n, bc);
      break;
    case 11:
      binary_kernel<uint64_t><<<g, kThreads, 0, st>>>(op, (const uint64_t*)a, (const uint64_t*)b, y, n, bc);
      break;
    case 12: binary_kernel<double><<<g, kThreads, 0, st>>>(op, (const double*)a, (const double*)b, y, n, bc); break;
    case 4: binary_16_kernel<__half><<<g, kThreads, 0, st>>>(op, (const __half*)a, (const __half*)b, y, n, bc); break;
    case 5:
      binary_16_kernel<__nv_bfloat16>
          <<<g, kThreads, 0, st>>>(op, (const __nv_bfloat16*)a, (const __nv_bfloat16*)b, y, n, bc);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int pow_mixed(int base_dtype, const void* a, int exp_dtype, const void* b, void* y, int64_t n, const Broadcast3& bc,
              StreamT stream) {
  if (n == 0) return 0;
  if (base_dtype < 0 || base_dtype > 12 || exp_dtype < 0 || exp_dtype > 12)
    return static_cast<int>(cudaErrorInvalidValue);
  pow_mixed_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(base_dtype, a, exp_dtype, b,
                                                                                           y, n, bc);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
