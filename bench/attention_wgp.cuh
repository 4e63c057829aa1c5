// The persistent, prefetching variant of the wgmma attention kernel, "wgp", for bench/attention_wgmma_probe.cu
// only. Measured on an H100 (2026-11-23, bench/results/attention_wgp_gemm_weight_layout_h100_2026-11-23.md):
// correct (max |wgp - float64| 5.2e-4 at BERT b32), but slower than the engine's wg2 everywhere it applies (BERT b32
// 12.07 against 9.69 us; its loop and barriers alone, with no copies, math or stores, took 6.1 us), so it is not in
// the engine and lives here with its ablations.
//
// Why: the wgmma kernel (attention_wgmma.cuh) takes 9.0 us at BERT b32 back to back, where its 25 MB can stay in
// L2; at L2 bandwidth the data would move in about 4 us, and ncu found the SMs 20 % busy. Each of its blocks copies
// its Q, K and V, then computes, then stores, and all blocks start together: copies and math barely overlap.
//
// This kernel keeps `ctas` blocks per SM resident. Each takes the units (one 128-row query block of one (b0, b1)
// entry) blockIdx.x, + gridDim.x, ..., and while it computes one unit the copies of the next kStages - 1 are in
// flight (cp.async groups, one per unit, into kStages shared-memory stages). Two warpgroups (256 threads) per block
// each take one 64-row tile of the unit, with the wgmma kernel's math unchanged: S = Q K^T from shared memory, the
// short kernel's softmax, O = P V with P in registers, O through the warpgroup's own Q rows to 16-byte stores.
// A key mask row is copied raw (cp.async) with the unit and turned into the log2-domain bias once it has landed.
//
// kAblate (compile-time, timing only; the outputs are then wrong): 1 no softmax
// (P = S), 2 no wgmma (S = 0, O = 0), 4 no copies from global memory, 8 no output stores.
//
// Preconditions (wgp_supports): those of the wgmma kernel, 128 or 256 keys at most (kChunks 8 or 16: the copy loop
// moves 32 rows per step), and a mask (if any) whose key stride is 1 and whose rows start on 16 bytes.
#pragma once
#include <algorithm>
#include <cstdint>

#include "ops/nn/fused_attention/cuda/attention_wgmma.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

constexpr int kWgpThreads = 256, kWgpRows = 128;

template <int kChunks>
struct WgpShape {
  static constexpr int kKeys = 16 * kChunks;
  static_assert(kKeys % (kWgpThreads / 8) == 0, "the copy loop moves 32 rows per step");
  static constexpr size_t kQBytes = size_t(kWgpRows) * kWgRowBytes, kKvBytes = size_t(kKeys) * kWgRowBytes;
  // After Q, K and V: the raw 16-bit mask row, then the float32 bias row; padded so that every stage's tiles start
  // on 1024 bytes (the swizzle reads address bits 7-9).
  static constexpr size_t kMaskOff = kQBytes + 2 * kKvBytes, kBiasOff = kMaskOff + size_t(kKeys) * 2;
  static constexpr size_t kStage = (kBiasOff + size_t(kKeys) * 4 + 1023) / 1024 * 1024;
  static constexpr size_t bytes(int stages) { return size_t(stages) * kStage + 1024; }
};

// cp.async of `bytes` (0-16) from src, zero-filling the rest of the 16-byte chunk.
__device__ __forceinline__ void wgp_cp_async_bytes(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes)
               : "memory");
}

struct WgpUnit {
  int64_t b0, b1;
  int q0;
};

__device__ __forceinline__ WgpUnit wgp_unit(int u, int qblocks, int64_t nb1) {
  WgpUnit w;
  w.q0 = (u % qblocks) * kWgpRows;
  const int64_t r = u / qblocks;
  w.b1 = r % nb1;
  w.b0 = r / nb1;
  return w;
}

// The copies of one unit into a stage (this thread's share; the caller commits the group).
template <class T, int kChunks, bool kKeyMask>
__device__ __forceinline__ void wgp_load(unsigned char* st, const AttentionArgs& a, const WgpUnit& u) {
  using Sh = WgpShape<kChunks>;
  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  short_copy_rows<T, kWgpThreads, kWgpRows>(
      st, static_cast<const T*>(a.q) + u.b0 * a.qs[0] + u.b1 * a.qs[1] + int64_t(u.q0) * a.qs[2], a.qs[2], sq - u.q0,
      wg_swz);
  short_copy_rows<T, kWgpThreads, Sh::kKeys>(
      st + Sh::kQBytes, static_cast<const T*>(a.k) + u.b0 * a.ks[0] + u.b1 * a.ks[1], a.ks[2], sk, wg_swz);
  short_copy_rows<T, kWgpThreads, Sh::kKeys>(st + Sh::kQBytes + Sh::kKvBytes,
                                             static_cast<const T*>(a.v) + u.b0 * a.vs[0] + u.b1 * a.vs[1], a.vs[2], sk,
                                             wg_swz);
  if constexpr (kKeyMask) {
    const T* mrow = static_cast<const T*>(a.mask) + u.b0 * a.ms[0] + u.b1 * a.ms[1];
    const int chunks = (sk * 2 + 15) / 16;
    for (int c = threadIdx.x; c < chunks; c += kWgpThreads)
      wgp_cp_async_bytes(st + Sh::kMaskOff + c * 16, mrow + c * 8, min(16, (sk - c * 8) * 2));
  }
}

// One 64-row tile (rows q0 .. q0 + 63) of a unit whose Q, K, V and bias are in stage `st`, by one warpgroup
// (`wtid` its thread index 0-127). The wgmma kernel's loop body, with K and V already resident.
template <class T, int kChunks, bool kKeyMask, int kAblate>
__device__ __forceinline__ void wgp_tile(unsigned char* st, unsigned char* qt, const AttentionArgs& a, const WgpUnit& u,
                                         int q0, int wtid) {
  using Sh = WgpShape<kChunks>;
  using B = Bits16<T>;
  constexpr int kN = 2 * kChunks;
  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int lane = wtid & 31, warp = wtid >> 5, g = lane >> 2, t = lane & 3;
  const float* bias = reinterpret_cast<const float*>(st + Sh::kBiasOff);
  const uint32_t qa = smem_addr(qt), ka = smem_addr(st + Sh::kQBytes), va = smem_addr(st + Sh::kQBytes + Sh::kKvBytes);
  const float sl2 = a.scale * kLog2e;
  const float mul = kKeyMask ? 1.f : sl2;

  float s[kN][4];
  if constexpr (kAblate & 2) {
#pragma unroll
    for (int n = 0; n < kN; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
  } else {
    wg_scores<T, Sh::kKeys>(s, qa, ka);
  }

  float mx[2], l[2] = {0.f, 0.f};
  uint32_t pa[kChunks][4];
  if constexpr (kAblate & 1) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) pa[c][2 * j + h] = B::pack(s[2 * c + j][2 * h], s[2 * c + j][2 * h + 1]);
    mx[0] = mx[1] = 0.f;
    l[0] = l[1] = 1.f;
  } else {
    short_softmax<T, kChunks, kKeyMask, true>(s, bias, sl2, mul, mx, pa, l);
  }

  float o[kLeanD / 8][4];
  if constexpr (!(kAblate & 2)) {
    wg_pv<T, kChunks>(o, pa, va);
  } else {
#pragma unroll
    for (int n = 0; n < kLeanD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) o[c % (kLeanD / 8)][0] += __uint_as_float(pa[c][0]);  // keep P alive
  }

  float inv[2];
  wg_row_inverse(l, mx, inv);
  const int wr = warp * 16;
  const bool active = q0 + wr < sq;
  if constexpr (!(kAblate & 1))
    if (active)
      short_masked_rows<T>(o, inv, mx, sk, a.zero_masked_rows,
                           [&](int key, int n) { return st + Sh::kQBytes + Sh::kKvBytes + wg_swz(key, n) + 4 * t; });
  wg_stage_o<T>(qt, o, inv, wr, g, t);
  __syncwarp();
  T* out = static_cast<T*>(a.o) + u.b0 * a.os[0] + u.b1 * a.os[1];
  if constexpr (kAblate & 8) {
    // No stores, but keep the work observable so that the compiler cannot drop it.
    const uint4 v = *reinterpret_cast<const uint4*>(qt + wg_swz(wr + (lane >> 3), lane & 7));
    if (v.x == 0x7fc17fc1u && v.y == 0x12345678u) *reinterpret_cast<uint4*>(out) = v;
  } else if (active) {
    wg_store_rows<T>(qt, out, a.os[2], q0, wr, lane, sq);
  }
}

// units = qblocks * b1 * b0 (qblocks = ceil(Sq / 128)); grid <= units. Registers: 128 at most for 128 keys (two
// blocks per SM fit, no spills, as the wgmma kernel's), free for 256 keys (128 made ptxas spill about 1 KB).
template <class T, int kChunks, bool kKeyMask, int kStages, int kAblate>
__global__ void __launch_bounds__(kWgpThreads, kChunks <= 8 ? 2 : 1)
    attention_wgp(AttentionArgs a, int qblocks, int units) {
  using Sh = WgpShape<kChunks>;
  static_assert(kStages >= 2, "double buffering at least");
  extern __shared__ __align__(128) unsigned char wgp_smem[];
  unsigned char* base = wgp_smem + ((1024u - (smem_addr(wgp_smem) & 1023u)) & 1023u);
  const int n = (units - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
  auto unit_of = [&](int i) {
    return wgp_unit(static_cast<int>(blockIdx.x) + i * static_cast<int>(gridDim.x), qblocks, a.b1);
  };
  const int wg = threadIdx.x >> 7, wtid = threadIdx.x & 127;
  const int sk = static_cast<int>(a.sk);

#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if constexpr (!(kAblate & 4))
      if (i < n) wgp_load<T, kChunks, kKeyMask>(base + i * Sh::kStage, a, unit_of(i));
    cp_async_commit();
  }
#pragma unroll 1
  for (int it = 0; it < n; ++it) {
    const int pre = it + kStages - 1;
    if constexpr (!(kAblate & 4))
      if (pre < n) wgp_load<T, kChunks, kKeyMask>(base + (pre % kStages) * Sh::kStage, a, unit_of(pre));
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // this thread's copies of unit `it` have landed
    proxy_fence();
    __syncthreads();
    unsigned char* st = base + (it % kStages) * Sh::kStage;
    fill_key_bias<T, kKeyMask, kWgpThreads>(reinterpret_cast<float*>(st + Sh::kBiasOff), Sh::kKeys, sk,
                                            reinterpret_cast<const T*>(st + Sh::kMaskOff), 1);
    __syncthreads();
    const WgpUnit u = unit_of(it);
    const int q0 = u.q0 + wg * kWgRows;
    if (q0 < a.sq)  // warpgroup-uniform
      wgp_tile<T, kChunks, kKeyMask, kAblate>(st, st + wg * (size_t(kWgRows) * kWgRowBytes), a, u, q0, wtid);
    __syncthreads();  // the stage is free for the copies issued at the top of the next iteration
  }
  cp_async_wait<0>();
}

inline bool wgp_supports(const AttentionArgs& a) {
  if (!short_supports(a)) return false;
  if (const int chunks = short_chunks(a.sk); chunks != 8 && chunks != 16) return false;  // WgpShape's copy loop
  if (!a.mask) return true;
  const uintptr_t m = reinterpret_cast<uintptr_t>(a.mask);
  return a.ms[3] == 1 && m % 16 == 0 && (a.ms[0] * 2) % 16 == 0 && (a.ms[1] * 2) % 16 == 0;
}

// ctas: blocks per SM to keep resident (capped by what fits); 0 = as many as fit. cudaErrorInvalidConfiguration when
// the stages do not fit in one block's shared memory.
template <class T, int kChunks, bool kKeyMask, int kStages, int kAblate>
int launch_wgp_mask(const AttentionArgs& a, int ctas, StreamT stream) {
  auto kernel = attention_wgp<T, kChunks, kKeyMask, kStages, kAblate>;
  const size_t bytes = WgpShape<kChunks>::bytes(kStages);
  int dev = 0, sms = 0, fit = 0, optin = 0;
  cudaError_t e;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess)
    return static_cast<int>(e);
  if (bytes > size_t(optin)) return static_cast<int>(cudaErrorInvalidConfiguration);  // e.g. 3 stages of 256 keys
  if ((e = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(bytes))) != cudaSuccess ||
      (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kWgpThreads, bytes)) != cudaSuccess)
    return static_cast<int>(e);
  if (fit < 1) return static_cast<int>(cudaErrorInvalidConfiguration);
  const int per_sm = ctas > 0 ? std::min(ctas, fit) : fit;
  const int qblocks = static_cast<int>((a.sq + kWgpRows - 1) / kWgpRows);
  const int64_t units64 = int64_t(qblocks) * a.b1 * a.b0;
  if (units64 <= 0 || units64 > INT32_MAX) return static_cast<int>(cudaErrorInvalidValue);
  const int units = static_cast<int>(units64);
  const int grid = std::min(units, per_sm * sms);
  kernel<<<grid, kWgpThreads, bytes, reinterpret_cast<cudaStream_t>(stream)>>>(a, qblocks, units);
  return launch_common::launch_status();
}

template <class T, int kStages, int kAblate = 0>
int launch_wgp(const AttentionArgs& a, int ctas, StreamT stream) {
  if (!wgp_supports(a)) return static_cast<int>(cudaErrorInvalidValue);
  if (short_chunks(a.sk) == 8)
    return a.mask ? launch_wgp_mask<T, 8, true, kStages, kAblate>(a, ctas, stream)
                  : launch_wgp_mask<T, 8, false, kStages, kAblate>(a, ctas, stream);
  return a.mask ? launch_wgp_mask<T, 16, true, kStages, kAblate>(a, ctas, stream)
                : launch_wgp_mask<T, 16, false, kStages, kAblate>(a, ctas, stream);
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
