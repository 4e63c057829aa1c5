// BitwiseAnd / Or / Xor and BitShift kernel (bitwise_kernels.h): one thread per output element, broadcasting; the
// arithmetic of the CPU reference (src/ops/math/binary/binary.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/math/binary/cuda/bitwise_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <class C>
__device__ __forceinline__ C shift_value(C x, C y, bool left) {
  using U = typename std::make_unsigned<C>::type;
  constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
  bool in_range = true;
  if constexpr (std::is_signed<C>::value) in_range = y >= C(0);
  if (in_range && static_cast<uint64_t>(y) >= static_cast<uint64_t>(kWidth)) in_range = false;
  if (!in_range) {
    if constexpr (std::is_signed<C>::value) return (!left && x < C(0)) ? C(-1) : C(0);
    return C(0);
  }
  const int n = static_cast<int>(y);
  if (left) return static_cast<C>(static_cast<U>(static_cast<U>(x) << n));
  if constexpr (std::is_signed<C>::value) {
    if (x < C(0)) return static_cast<C>(~(static_cast<U>(~x) >> n));
  }
  return static_cast<C>(x >> n);
}

template <class T>
__global__ void bit_binary_kernel(int op, const T* a, const T* b, T* y, int64_t n, Broadcast3 bc) {
  KILNRT_GRID_LOOP(i, n) {
    int64_t oa = i, ob = i;
    if (!bc.contiguous_same) {
      oa = ob = 0;
      int64_t rem = i;
#pragma unroll
      for (int d = kMaxDims - 1; d >= 0; --d) {
        if (d >= bc.rank) continue;
        const int64_t idx = rem % bc.dims[d];
        rem /= bc.dims[d];
        oa += idx * bc.s1[d];
        ob += idx * bc.s2[d];
      }
    }
    const T x = a[oa], v = b[ob];
    T r;
    switch (op) {
      case 0: r = T(x & v); break;
      case 1: r = T(x | v); break;
      case 2: r = T(x ^ v); break;
      case 3: r = shift_value<T>(x, v, true); break;
      default: r = shift_value<T>(x, v, false); break;
    }
    y[i] = r;
  }
}

template <class T>
int launch_binary(int op, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc, StreamT stream) {
  bit_binary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                               static_cast<T*>(y), n, bc);
  return launch_status();
}

}  // namespace

int bit_binary(int op, int int_code, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
               StreamT stream) {
  if (n <= 0) return 0;
  if (op < 0 || op > 4 || bc.rank > kMaxDims) return static_cast<int>(cudaErrorInvalidValue);
  switch (int_code) {
    case kI8: return launch_binary<int8_t>(op, a, b, y, n, bc, stream);
    case kU8: return launch_binary<uint8_t>(op, a, b, y, n, bc, stream);
    case kI16: return launch_binary<int16_t>(op, a, b, y, n, bc, stream);
    case kU16: return launch_binary<uint16_t>(op, a, b, y, n, bc, stream);
    case kI32: return launch_binary<int32_t>(op, a, b, y, n, bc, stream);
    case kU32: return launch_binary<uint32_t>(op, a, b, y, n, bc, stream);
    case kI64: return launch_binary<int64_t>(op, a, b, y, n, bc, stream);
    case kU64: return launch_binary<uint64_t>(op, a, b, y, n, bc, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
