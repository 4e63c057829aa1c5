// Building blocks of the mma.sync attention kernels (attention_mma.cu, attention_fa2.cuh; sm_80+): PTX wrappers
// (cp.async, ldmatrix), the 16-bit mma / conversion traits, 16-byte row copies into shared memory, mask pairs and
// the host-side alignment checks. Included by the .cu files of this folder only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::attention_mma_detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;

// ---- PTX wrappers (sm_80+) ------------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared; valid == false zero-fills the destination (the source is not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

// 16-bit type traits: the mma instruction, float <-> packed pair conversions.
template <class T>
struct Bits16;
template <>
struct Bits16<__half> {
  using Pair = __half2;
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static float2 unpack(Pair p) { return __half22float2(p); }
  __device__ static float to_f(__half x) { return __half2float(x); }
};
template <>
struct Bits16<__nv_bfloat16> {
  using Pair = __nv_bfloat162;
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ static uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static float2 unpack(Pair p) { return __bfloat1622float2(p); }
  __device__ static float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
};

// Starts the copy of `rows` rows of D elements (row stride rs) into shared memory (row stride D + 8: the 16-byte
// pad keeps ldmatrix free of bank conflicts). Rows >= valid are zero-filled.
template <class T, int D, int kThreads>
__device__ __forceinline__ void load_rows_async(T* dst, const T* src, int64_t rs, int rows, int valid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i - r * kChunks) * 8;
    const bool ok = r < valid;
    cp_async16(dst + r * (D + 8) + c, src + (ok ? r * rs : 0) + c, ok);
  }
}

enum Flags : int {
  kPairOut = 1,   // O: unit column stride, 4-byte aligned pairs
  kPairMask = 2,  // mask: unit key stride, 4-byte aligned pairs
};

// Mask values of keys (key, key + 1) of one row (0 past Sk: those scores are -inf anyway).
template <class T>
__device__ __forceinline__ float2 mask_pair(const T* row, int key, int64_t cs, bool pair, int sk) {
  using B = Bits16<T>;
  if (pair && key + 1 < sk) return B::unpack(*reinterpret_cast<const typename B::Pair*>(row + key));
  return make_float2(key < sk ? B::to_f(row[key * cs]) : 0.f, key + 1 < sk ? B::to_f(row[(key + 1) * cs]) : 0.f);
}

// 2^x in one MUFU instruction (denormal results flush to zero; 2^-inf = 0).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 2^x of both halves of a float16 pair in one MUFU instruction (2^-inf = 0).
__device__ __forceinline__ uint32_t ex2_half2(uint32_t x) {
  uint32_t y;
  asm("ex2.approx.f16x2 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

inline bool aligned(const void* p, unsigned bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }
// Rows movable with 16-byte copies: unit element stride, every row start 16-byte aligned (8 elements).
inline bool rows16(const void* p, const int64_t (&s)[4]) {
  return s[3] == 1 && s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0 && aligned(p, 16);
}
// Pairs of adjacent elements along the last axis movable as 4 bytes.
inline bool pairs4(const void* p, const int64_t (&s)[4]) {
  return s[3] == 1 && s[0] % 2 == 0 && s[1] % 2 == 0 && s[2] % 2 == 0 && aligned(p, 4);
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
