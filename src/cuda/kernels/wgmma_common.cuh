// Hopper warpgroup-MMA building blocks for sm_90a kernels: the 128-byte swizzle, shared-memory matrix descriptors,
// the wgmma fences and the m64n64k16 instruction with both operands in shared memory (KILNRT_WGMMA_SS writes the
// instruction for other shapes). Used by attention_wgmma.cuh and by the GEMM + LayerNorm probe kernel
// (bench/gemm_layernorm_kernel.cuh). Included by .cu files only; the cp.async and shared-address helpers are
// mma_ptx.cuh's. Outside an sm_90a compilation the wgmma parts compile to nothing (their kernels are then
// never launched: see the *_built() functions).
//
// Keep the wgmma instructions between fence() and commit() free of runtime branches and of other uses of their
// accumulator registers: ptxas otherwise injects a warpgroup.arrive before each one and the MMAs run one after
// another. It only says so in an info line (C7519, "warpgroup.arrive is injected"). A kernel built from these
// helpers must compile without that line; in the GEMM + LayerNorm probe it cost 28 % of the K loop.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KILNRT_WGMMA 1
#else
#define KILNRT_WGMMA 0
#endif

namespace kilnrt::cuda::kernels::wgmma {

constexpr int kRowBytes = 128;  // one 128-byte swizzle atom along the contiguous dimension

// Byte offset of 16-byte chunk `chunk` of row `row` in a 128-byte-swizzled tile (1024-byte aligned base).
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
  return uint32_t(row) * kRowBytes + (uint32_t((chunk ^ (row & 7))) << 4);
}

// Shared-memory matrix descriptor: 128-byte swizzle, 1024 bytes between groups of 8 rows (SBO), leading byte offset
// 16 (unused when an instruction reads one 128-byte atom along the contiguous dimension, as all of kilnrt's do).
__device__ __forceinline__ uint64_t desc(uint32_t smem_byte_addr) {
  return uint64_t((smem_byte_addr & 0x3FFFF) >> 4) | (uint64_t(16 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

__device__ __forceinline__ void fence() {
#if KILNRT_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#if KILNRT_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void wait() {
#if KILNRT_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}
// Makes this thread's generic-proxy writes to shared memory (cp.async, stores) visible to wgmma's async proxy.
__device__ __forceinline__ void proxy_fence() {
#if KILNRT_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// The accumulator operands of an m64n64 instruction (32 per thread): the list in the instruction, and the outputs.
#define KILNRT_WGMMA_REGS32                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define KILNRT_WGMMA_D32(d)                                                                                    \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),     \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

// One wgmma.mma_async with A and B in shared memory, inside a function with `da`, `db` (descriptors), `accumulate`
// (0 overwrites D) and the template parameter kTransB (B MN-major). TY: "f16" or "bf16"; SHAPE: "m64n64k16"...;
// REGS: the accumulator list; IA / IB / IACC / ITB: the operand numbers of da, db, accumulate and kTransB, which
// follow the accumulators; the outputs last.
#define KILNRT_WGMMA_SS(TY, SHAPE, REGS, IA, IB, IACC, ITB, ...)                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " IACC ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY \
               " " REGS ", " IA ", " IB ", p, 1, 1, 0, " ITB ";\n}\n"                                                 \
               : __VA_ARGS__                                                                                          \
               : "l"(da), "l"(db), "r"(accumulate), "n"(kTransB))

// D[64 x 64] (+)= A[64 x 16] B[16 x 64], both from shared memory; A K-major; B K-major (kTransB = 0: rows of B^T
// are N, 16 contiguous K values) or MN-major (kTransB = 1: rows are K, 64 contiguous N values). d: this thread's 8
// n8-tiles (mma.sync's accumulator layout per warp). accumulate == 0 overwrites D.
template <class T, int kTransB>
__device__ __forceinline__ void mma_ss_n64(float (*d)[4], uint64_t da, uint64_t db, int accumulate) {
#if KILNRT_WGMMA
  if constexpr (std::is_same_v<T, __half>)
    KILNRT_WGMMA_SS("f16", "m64n64k16", KILNRT_WGMMA_REGS32, "%32", "%33", "%34", "%35", KILNRT_WGMMA_D32(d));
  else
    KILNRT_WGMMA_SS("bf16", "m64n64k16", KILNRT_WGMMA_REGS32, "%32", "%33", "%34", "%35", KILNRT_WGMMA_D32(d));
#endif
}

}  // namespace kilnrt::cuda::kernels::wgmma
