// The second FlashAttention-2-style kernel, a template over its work split, instantiated per storage dtype
// and head size by attention_fa2_{f16,bf16}[_d64].cu and picked by attention_mma.cu. Compared with the first kernel
// (attention_mma.cu, one 16-row m-tile per warp, 64 rows per block, every warp walking every key tile):
//   - kMt m-tiles per warp (16 * kMt query rows): each K / V fragment read by ldmatrix feeds kMt mma, and a warp has
//     kMt independent softmax / mma chains to interleave;
//   - kSplit warps share the same query rows and split the keys: a stage in shared memory holds kSplit tiles of 64
//     keys, warp g of a row group takes tile g; at the end the warps of a row group merge their (max, sum, O) through
//     shared memory. At batch 1 (12 heads) this gives more, shorter blocks; at S <= 64 * kSplit the whole K / V of a
//     head is one stage (no key loop);
//   - the tail of the keys: 16-key chunks past Sk are skipped (no mma, no copy), the per-key checks only run in the
//     tail tile; warps whose rows all lie past Sq skip their math;
//   - softmax: one warp vote per tile picks the plain path (2^(x - max), no -inf checks per score) unless a row has
//     seen only -inf so far; a key mask that broadcasts over the queries ([B, 1, 1, S]) is read once per key pair for
//     all of a lane's rows.
// H100 (2026-11-22; bench/results/README.md): the key split wins at batch 1 (-29 to -35 % against the first
// kernel), one m-tile with free registers at batch 32 (-12 % BERT, -2 % ViT); two m-tiles lose everywhere.
// Semantics are those of the first kernel: strides on every operand, masks with broadcast strides, all -inf rows
// uniform (zeros with zero_masked_rows), float32 accumulation, P rounded to 16 bits.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/fused_attention/cuda/attention.h"

namespace kilnrt::cuda::kernels::attention_mma_detail {

constexpr int kFa2Keys = 64;  // keys per warp tile

enum Fa2Flags : int {
  kFa2PairOut = 1,   // O: unit column stride, 4-byte aligned pairs
  kFa2PairMask = 2,  // mask: unit key stride, 4-byte aligned pairs
  kFa2KeyMask = 4,   // mask broadcasts over the queries (query stride 0): one row for the whole block
};

template <class T, int D, int kMt, int kRowWarps, int kSplit>
struct Fa2Shape {
  static constexpr int kWarps = kRowWarps * kSplit, kThreads = 32 * kWarps, kRows = kRowWarps * kMt * 16;
  static constexpr int kLd = D + 8;  // shared-memory row stride: the 16-byte pad keeps ldmatrix conflict-free
  static constexpr int kStageKeys = kSplit * kFa2Keys;
  static constexpr size_t kQBytes = size_t(kRows) * kLd * sizeof(T);
  static constexpr size_t kStageBytes = 2 * size_t(kStageKeys) * kLd * sizeof(T);  // K then V
  static constexpr int kPerLane = kMt * D / 2 + 4 * kMt;  // merge scratch per lane: O, then (max, sum) per row
  static constexpr size_t kScratchBytes = size_t(kSplit - 1) * kRowWarps * 32 * kPerLane * sizeof(float);
  static_assert(D % 16 == 0 && D <= 128, "head size");
  static_assert(kMt == 1 || kMt == 2, "one or two m-tiles per warp");
  static_assert(kScratchBytes <= kStageBytes, "the merge scratch reuses the first stage");
};

// Per-warp state: the running output, row max and per-lane partial row sum of this lane's 2 * kMt rows.
template <int D, int kMt>
struct Fa2Acc {
  float o[kMt][D / 8][4];
  float m[kMt][2];
  float l[kMt][2];
  uint32_t qf[kMt][D / 16][4];  // Q as mma A fragments
};

struct Fa2Mask {
  const void* key_row;     // kFa2KeyMask: the one mask row of this (b0, b1)
  const void* rows[2][2];  // else the mask row of each of this lane's rows [mt][h] (nullptr: no mask, or past Sq)
  int64_t cs;
  bool pair;
  int mode;  // 0 none, 1 key row, 2 per row
};

// One 64-key tile of one warp: S = Q K^T, online softmax, O += P V. kPartial: the tile ends past Sk (valid < 64):
// 16-key chunks at or past Sk are skipped, the keys past Sk of the last chunk get -inf.
template <class T, int D, int kMt, bool kPartial>
__device__ __forceinline__ void fa2_tile(Fa2Acc<D, kMt>& acc, const T* kb, const T* vb, int kbase, int valid, int sk,
                                         float sl2, const Fa2Mask& mk) {
  using B = Bits16<T>;
  constexpr int kLd = D + 8;
  const int lane = threadIdx.x & 31, t = lane & 3;
  float s[kMt][kFa2Keys / 8][4];
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int i = 0; i < kFa2Keys / 8; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int np = 0; np < kFa2Keys / 16; ++np) {
      if (kPartial && np * 16 >= valid) continue;
      uint32_t b[4];
      ldsm_x4(b, kb + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        B::mma(s[mt][2 * np], acc.qf[mt][kk], b[0], b[1]);
        B::mma(s[mt][2 * np + 1], acc.qf[mt][kk], b[2], b[3]);
      }
    }
  }

  // Scale (log2 domain), mask (a key mask read once per key pair for all rows), keys past Sk -> -inf; the tile max
  // of each row (its four lanes).
  float mn[kMt][2];
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) mn[mt][0] = mn[mt][1] = -INFINITY;
#pragma unroll
  for (int i = 0; i < kFa2Keys / 8; ++i) {
    const int key = kbase + i * 8 + 2 * t;
    float2 km = make_float2(0.f, 0.f);
    if (mk.mode == 1) km = mask_pair(static_cast<const T*>(mk.key_row), key, mk.cs, mk.pair, sk);
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x0 = s[mt][i][2 * h] * sl2, x1 = s[mt][i][2 * h + 1] * sl2;
        if (mk.mode == 1) {
          x0 = fmaf(km.x, kLog2e, x0);
          x1 = fmaf(km.y, kLog2e, x1);
        } else if (mk.mode == 2 && mk.rows[mt][h]) {
          const float2 mv = mask_pair(static_cast<const T*>(mk.rows[mt][h]), key, mk.cs, mk.pair, sk);
          x0 = fmaf(mv.x, kLog2e, x0);
          x1 = fmaf(mv.y, kLog2e, x1);
        }
        if (kPartial) {
          if (key >= sk) x0 = -INFINITY;
          if (key + 1 >= sk) x1 = -INFINITY;
        }
        s[mt][i][2 * h] = x0;
        s[mt][i][2 * h + 1] = x1;
        mn[mt][h] = fmaxf(mn[mt][h], fmaxf(x0, x1));
      }
    }
  }
  bool none = false;
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = mn[mt][h];
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
      mn[mt][h] = fmaxf(acc.m[mt][h], mx);
      none |= mn[mt][h] == -INFINITY;
    }
  }
  if (!__any_sync(kFull, none)) {
    // Every row of the warp has a finite max: 2^(x - max) (0 for -inf scores), old output scaled by 2^(m - max).
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float alpha = ex2(acc.m[mt][h] - mn[mt][h]);  // m = -inf: 0
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < kFa2Keys / 8; ++i) {
          const float p0 = ex2(s[mt][i][2 * h] - mn[mt][h]), p1 = ex2(s[mt][i][2 * h + 1] - mn[mt][h]);
          s[mt][i][2 * h] = p0;
          s[mt][i][2 * h + 1] = p1;
          sum += p0 + p1;
        }
        acc.l[mt][h] = acc.l[mt][h] * alpha + sum;
        acc.m[mt][h] = mn[mt][h];
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          acc.o[mt][n][2 * h] *= alpha;
          acc.o[mt][n][2 * h + 1] *= alpha;
        }
      }
    }
  } else {
    // Some row has seen only -inf: its weights are 1 for valid keys (uniform) until a finite score arrives.
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool nr = mn[mt][h] == -INFINITY;
        const float alpha = nr ? 1.f : ex2(acc.m[mt][h] - mn[mt][h]);
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < kFa2Keys / 8; ++i) {
          const int key = kbase + i * 8 + 2 * t;
          const float p0 = nr ? (key < sk ? 1.f : 0.f) : ex2(s[mt][i][2 * h] - mn[mt][h]);
          const float p1 = nr ? (key + 1 < sk ? 1.f : 0.f) : ex2(s[mt][i][2 * h + 1] - mn[mt][h]);
          s[mt][i][2 * h] = p0;
          s[mt][i][2 * h + 1] = p1;
          sum += p0 + p1;
        }
        acc.l[mt][h] = acc.l[mt][h] * alpha + sum;
        acc.m[mt][h] = mn[mt][h];
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          acc.o[mt][n][2 * h] *= alpha;
          acc.o[mt][n][2 * h + 1] *= alpha;
        }
      }
    }
  }

  // O += P V: P (16-bit) as A fragments straight from the S accumulators, V via ldmatrix .trans.
#pragma unroll
  for (int kk = 0; kk < kFa2Keys / 16; ++kk) {
    if (kPartial && kk * 16 >= valid) continue;
    uint32_t pa[kMt][4];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
      pa[mt][0] = B::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = B::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = B::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = B::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dn = 0; dn < D / 16; ++dn) {
      uint32_t b[4];
      ldsm_x4_trans(b, vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + dn * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        B::mma(acc.o[mt][2 * dn], pa[mt], b[0], b[1]);
        B::mma(acc.o[mt][2 * dn + 1], pa[mt], b[2], b[3]);
      }
    }
  }
}

// kMinBlocks: blocks per SM the registers must allow (__launch_bounds__); 1 leaves the register count free.
template <class T, int D, int kMt, int kRowWarps, int kSplit, int kMinBlocks>
__global__ void __launch_bounds__(32 * kRowWarps * kSplit, kMinBlocks) attention_fa2v2(AttentionArgs a, int flags) {
  using Sh = Fa2Shape<T, D, kMt, kRowWarps, kSplit>;
  using B = Bits16<T>;
  constexpr int kLd = Sh::kLd, kRows = Sh::kRows, kThreads = Sh::kThreads, kSK = Sh::kStageKeys;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qsm = reinterpret_cast<T*>(smem);
  T* stage0 = qsm + kRows * kLd;  // stage s: K [kSK][kLd] at stage0 + s * 2 * kSK * kLd, V right after

  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int q0 = blockIdx.x * kRows;
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;
  const T* q = static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1] + int64_t(q0) * a.qs[2];
  const T* k = static_cast<const T*>(a.k) + b0 * a.ks[0] + b1 * a.ks[1];
  const T* v = static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int rw = warp / kSplit, kg = warp - rw * kSplit;  // row group, key tile within a stage
  const int wr = rw * kMt * 16;                           // the warp's first row in the block
  const bool active = q0 + wr < sq;                       // warp-uniform
  const int nst = (sk + kSK - 1) / kSK;

  load_rows_async<T, D, kThreads>(qsm, q, a.qs[2], kRows, min(kRows, sq - q0));
  auto load_stage = [&](int j) {
    T* kd = stage0 + (j & 1) * 2 * kSK * kLd;
    const int kt = j * kSK, valid = min(kSK, sk - kt);
    const int rows = min(kSK, (valid + 15) & ~15);  // 16-key chunks at or past Sk are never read
    load_rows_async<T, D, kThreads>(kd, k + int64_t(kt) * a.ks[2], a.ks[2], rows, valid);
    load_rows_async<T, D, kThreads>(kd + kSK * kLd, v + int64_t(kt) * a.vs[2], a.vs[2], rows, valid);
  };
  if (nst > 0) load_stage(0);
  cp_async_commit();

  Fa2Mask mk;
  const T* mbase = a.mask ? static_cast<const T*>(a.mask) + b0 * a.ms[0] + b1 * a.ms[1] : nullptr;
  mk.cs = a.ms[3];
  mk.pair = flags & kFa2PairMask;
  mk.mode = !mbase ? 0 : (flags & kFa2KeyMask) ? 1 : 2;
  mk.key_row = mbase;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = q0 + wr + mt * 16 + g + 8 * h;
      mk.rows[mt][h] = mbase && mt < kMt && r < sq ? mbase + int64_t(r) * a.ms[2] : nullptr;
    }
  const float sl2 = a.scale * kLog2e;

  Fa2Acc<D, kMt> acc;
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n) acc.o[mt][n][0] = acc.o[mt][n][1] = acc.o[mt][n][2] = acc.o[mt][n][3] = 0.f;
    acc.m[mt][0] = acc.m[mt][1] = -INFINITY;
    acc.l[mt][0] = acc.l[mt][1] = 0.f;
  }

  for (int j = 0; j < nst; ++j) {
    if (j + 1 < nst) load_stage(j + 1);
    cp_async_commit();
    cp_async_wait<1>();  // everything but stage j + 1 has landed
    __syncthreads();
    if (j == 0 && active) {
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
          ldsm_x4(acc.qf[mt][kk], qsm + (wr + mt * 16 + (lane & 15)) * kLd + kk * 16 + (lane >> 4) * 8);
    }
    const int kbase = j * kSK + kg * kFa2Keys;
    const int valid = sk - kbase;  // keys of this warp's tile that exist (may be <= 0)
    if (active && valid > 0) {
      const T* kb = stage0 + (j & 1) * 2 * kSK * kLd + kg * kFa2Keys * kLd;
      const T* vb = kb + kSK * kLd;
      if (valid >= kFa2Keys)
        fa2_tile<T, D, kMt, false>(acc, kb, vb, kbase, valid, sk, sl2, mk);
      else
        fa2_tile<T, D, kMt, true>(acc, kb, vb, kbase, valid, sk, sl2, mk);
    }
    __syncthreads();  // stage j & 1 is refilled by the next iteration's copy of stage j + 2
  }
  cp_async_wait<0>();

  if constexpr (kSplit > 1) {
    // Merge the kSplit warps of each row group: warps 1.. write (O, max, partial sums) lane by lane, warp 0 adds
    // them scaled by 2^(m_i - M) (1 for all while M = -inf: every warp then holds uniform weights of its keys).
    __syncthreads();
    float* scr = reinterpret_cast<float*>(stage0);
    if (kg > 0 && active) {
      float* w = scr + size_t(rw * (kSplit - 1) + kg - 1) * 32 * Sh::kPerLane + lane;
      int idx = 0;
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) w[32 * idx++] = acc.o[mt][n][c];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          w[32 * idx++] = acc.m[mt][h];
          w[32 * idx++] = acc.l[mt][h];
        }
    }
    __syncthreads();
    if (kg > 0 || !active) return;
    constexpr int kMl = kMt * D / 2;  // index of the first (max, sum) pair
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = acc.m[mt][h];
        for (int w2 = 1; w2 < kSplit; ++w2)
          mx = fmaxf(mx, scr[(size_t(rw * (kSplit - 1) + w2 - 1) * Sh::kPerLane + kMl + 2 * (2 * mt + h)) * 32 + lane]);
        const float f = mx == -INFINITY ? 1.f : ex2(acc.m[mt][h] - mx);
        acc.l[mt][h] *= f;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          acc.o[mt][n][2 * h] *= f;
          acc.o[mt][n][2 * h + 1] *= f;
        }
        for (int w2 = 1; w2 < kSplit; ++w2) {
          const float* r = scr + size_t(rw * (kSplit - 1) + w2 - 1) * 32 * Sh::kPerLane + lane;
          const float mi = r[32 * (kMl + 2 * (2 * mt + h))], li = r[32 * (kMl + 2 * (2 * mt + h) + 1)];
          const float fi = mx == -INFINITY ? 1.f : ex2(mi - mx);
          acc.l[mt][h] += fi * li;
#pragma unroll
          for (int n = 0; n < D / 8; ++n) {
            acc.o[mt][n][2 * h] += fi * r[32 * ((mt * (D / 8) + n) * 4 + 2 * h)];
            acc.o[mt][n][2 * h + 1] += fi * r[32 * ((mt * (D / 8) + n) * 4 + 2 * h + 1)];
          }
        }
        acc.m[mt][h] = mx;
      }
  }
  if (!active) return;

  // Normalise and store.
  const bool pair_out = flags & kFa2PairOut;
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float lt = acc.l[mt][h];
      lt += __shfl_xor_sync(kFull, lt, 1);
      lt += __shfl_xor_sync(kFull, lt, 2);
      const int row = q0 + wr + mt * 16 + g + 8 * h;
      if (row >= sq) continue;
      const float inv = lt > 0.f && !(a.zero_masked_rows && acc.m[mt][h] == -INFINITY) ? 1.f / lt : 0.f;
      T* out = static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1] + int64_t(row) * a.os[2];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const int c = n * 8 + 2 * t;
        const uint32_t pk = B::pack(acc.o[mt][n][2 * h] * inv, acc.o[mt][n][2 * h + 1] * inv);
        if (pair_out) {
          *reinterpret_cast<uint32_t*>(out + c) = pk;
        } else {
          const T* e = reinterpret_cast<const T*>(&pk);
          out[c * a.os[3]] = e[0];
          out[(c + 1) * a.os[3]] = e[1];
        }
      }
    }
}

template <class T, int D, int kMt, int kRowWarps, int kSplit, int kMinBlocks>
int launch_fa2v2(const AttentionArgs& a, StreamT stream) {
  using Sh = Fa2Shape<T, D, kMt, kRowWarps, kSplit>;
  const int64_t nst = (a.sk + Sh::kStageKeys - 1) / Sh::kStageKeys;
  const size_t bytes = Sh::kQBytes + size_t(nst >= 2 ? 2 : 1) * Sh::kStageBytes;
  auto kernel = attention_fa2v2<T, D, kMt, kRowWarps, kSplit, kMinBlocks>;
  const cudaError_t st = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (st != cudaSuccess) return static_cast<int>(st);
  const int flags = (pairs4(a.o, a.os) ? kFa2PairOut : 0) | (a.mask && pairs4(a.mask, a.ms) ? kFa2PairMask : 0) |
                    (a.mask && a.ms[2] == 0 ? kFa2KeyMask : 0);
  const dim3 grid(static_cast<unsigned>((a.sq + Sh::kRows - 1) / Sh::kRows), static_cast<unsigned>(a.b1),
                  static_cast<unsigned>(a.b0));
  kernel<<<grid, Sh::kThreads, bytes, reinterpret_cast<cudaStream_t>(stream)>>>(a, flags);
  return launch_common::launch_status();
}

// The configurations attention_mma.cu can pick (variant i + 1; variant 0 is the first kernel): the ones that won at
// some zoo shape in the H100 sweep (2026-11-22; bench/results/README.md), plus m2r2s2, which keeps the
// two-m-tile path built and tested (it lost everywhere: 247-249 registers, 8 warps per SM). cap: registers capped
// at 128 per thread (with 4 warps per block: 4 blocks per SM), else free (up to 255). Configurations marked d64 are
// built for D = 64 only (the zoo's head size); at D = 32 / 128 they run as the first entry. At D = 128 two m-tiles
// would not fit in the registers (O alone is 128 per lane), nor four 64-key tiles per stage twice in shared memory:
// there a configuration runs with one m-tile, at most two key tiles per stage and free registers.
struct Fa2Config {
  const char* name;
  int mt, rw, ks;  // m-tiles per warp, row-group warps, warps splitting the keys
  bool cap, d64;
};
constexpr Fa2Config kFa2Configs[] = {
    {"m1r4s1c", 1, 4, 1, true, false}, {"m1r4s1", 1, 4, 1, false, true},  {"m1r4s2c", 1, 4, 2, true, true},
    {"m1r2s2c", 1, 2, 2, true, false}, {"m1r1s2c", 1, 1, 2, true, false}, {"m1r1s4c", 1, 1, 4, true, false},
    {"m2r2s2", 2, 2, 2, false, false},
};
constexpr int kFa2ConfigCount = sizeof(kFa2Configs) / sizeof(kFa2Configs[0]);

template <class T, int D, int I = 0>
int fa2_launch_d(const AttentionArgs& a, int config, StreamT stream) {
  if constexpr (I < kFa2ConfigCount) {
    constexpr Fa2Config c = kFa2Configs[I];
    if (config != I) return fa2_launch_d<T, D, I + 1>(a, config, stream);
    if constexpr (c.d64 && D != 64) {
      return fa2_launch_d<T, D, 0>(a, 0, stream);
    } else {
      constexpr int mt = D > 64 ? 1 : c.mt, ks = D > 64 && c.ks > 2 ? 2 : c.ks;
      constexpr int min_blocks = c.cap && D <= 64 ? 65536 / (128 * 32 * c.rw * ks) : 1;
      return launch_fa2v2<T, D, mt, c.rw, ks, (min_blocks < 1 ? 1 : min_blocks)>(a, stream);
    }
  } else {
    return static_cast<int>(cudaErrorInvalidValue);
  }
}

// Launches configuration `config` (an index into kFa2Configs) for D in {32, 64, 128}. Defined per dtype by
// attention_fa2_f16.cu / attention_fa2_bf16.cu, which take D = 32 and 128 and call the D = 64 half in
// attention_fa2_{f16,bf16}_d64.cu (four translation units: they build in parallel).
int fa2_launch_f16(const AttentionArgs& a, int config, StreamT stream);
int fa2_launch_bf16(const AttentionArgs& a, int config, StreamT stream);
int fa2_launch_f16_d64(const AttentionArgs& a, int config, StreamT stream);
int fa2_launch_bf16_d64(const AttentionArgs& a, int config, StreamT stream);

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
