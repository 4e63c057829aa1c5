// The third mma.sync attention kernel ("lean"): the FlashAttention-2 scheme of attention_fa2.cuh cut down to
// the zoo's batch-32 shapes (BERT-base S 128 with its [B, 1, 1, S] key mask, ViT-B/16 S 197 without a mask; D = 64),
// written for the fewest instructions per 64-key tile. ncu of the second kernel at ViT b32 (H100, 2026-11-22) showed
// an issue-bound kernel: ~1000 instructions per warp and tile (64 of them mma), 9 % branches (the mask modes and tail
// checks resolved per score), 12 warps per SM (154 registers), stalls on fixed-latency dependencies and on
// instruction fetch. Here:
//   - a key mask is a key bias: once per block the [Sk] row of the key mask (times log2 e) is written to shared
//     memory as float32, -inf past Sk; a tile then adds one float2 per key pair (one FFMA per score with the scale).
//     Without a mask, full tiles take the row max of the raw scores and fold the scale and the max into one FFMA per
//     score; only the last, partial tile reads the bias (0 / -inf). A mask with a row per query (BERT's exported
//     [B, 1, S, S]) is copied per tile with K / V (cp.async, 16-byte chunks) and read as 16-bit pairs;
//   - the template fixes the tile kind: full 64-key tiles run without any per-key check, a tail of <= 16 keys runs
//     one 16-key chunk, other tails the full tile on zero-filled rows with the -inf bias;
//   - the row sums come from the tensor cores: one extra mma per 16 keys multiplies P by a column of ones, so the sum
//     is that of the 16-bit P that O sees (no float adds, no shuffles at the end);
//   - K / V copies: each thread's 16-byte chunks of a tile have fixed offsets (one pointer add per tile); 16-key
//     chunks at or past Sk are neither copied nor multiplied;
//   - registers capped at 128 (4 warps: 4 blocks per SM; 8 warps: 2);
//   - O goes through the warp's rows of the Q buffer in shared memory and leaves as 16-byte row stores.
// A row whose keys are all -inf gets the mean of V over the keys (zeros with zero_masked_rows), as the other kernels
// do; that path reads V from global memory and only runs when a warp has such a row.
// Preconditions (lean_supports): 16-bit storage, D == Dv == 64, Q / K / V / O rows movable with 16-byte copies, no
// mask, one that broadcasts over the queries (query stride 0) or one with 16-byte rows and Sk % 8 == 0,
// 1 <= Sk <= kLeanMaxKeys, scale > 0.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/fused_attention/cuda/attention.h"

namespace kilnrt::cuda::kernels::attention_mma_detail {

constexpr int kLeanD = 64, kLeanLd = kLeanD + 8, kLeanKeys = 64;
constexpr int kLeanMaxKeys = 4096;  // bias row in shared memory: 16 KB

// 16 bytes global -> shared, always valid.
__device__ __forceinline__ void cp_async16_full(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}

template <class T>
struct LeanOnes;  // two 16-bit ones, the B operand of the row-sum mma
template <>
struct LeanOnes<__half> {
  static constexpr uint32_t kBits = 0x3C003C00u;
};
template <>
struct LeanOnes<__nv_bfloat16> {
  static constexpr uint32_t kBits = 0x3F803F80u;
};

template <int kWarps>
struct LeanShape {
  static constexpr int kThreads = 32 * kWarps, kRows = 16 * kWarps;
  static constexpr size_t kQBytes = size_t(kRows) * kLeanLd * 2;
  static constexpr size_t kStageBytes = 2 * size_t(kLeanKeys) * kLeanLd * 2;  // K then V
  static constexpr int kRowStep = kThreads / 8;                               // rows one copy instruction covers
  static constexpr int kCopies = kLeanKeys / kRowStep;                        // per thread, per matrix and tile
  static size_t bytes(int64_t sk, bool row_mask) {
    const int64_t tiles = (sk + kLeanKeys - 1) / kLeanKeys;
    const size_t stage = kStageBytes + (row_mask ? kQBytes : 0);  // the mask tile: one row per query row
    return kQBytes + size_t(tiles >= 2 ? 2 : 1) * stage + size_t(tiles) * kLeanKeys * sizeof(float);
  }
};

// Per-warp state: O (16 x 64 as 8 n-tiles), the row sums (an n-tile of P x ones: c[0] row g, c[2] row g + 8), the
// running max (log2 domain) of rows g and g + 8, Q as A fragments.
struct LeanAcc {
  float o[kLeanD / 8][4];
  float l[4];
  float m[2];
  uint32_t qf[kLeanD / 16][4];
};

// Mask modes of the kernel.
enum LeanMask : int {
  kLeanNoMask = 0,
  kLeanKeyMask = 1,  // the mask broadcasts over the queries (query stride 0): one bias row per block
  kLeanRowMask = 2,  // a mask row per query (e.g. BERT's exported [B, 1, S, S]): copied per tile like K / V
};

// Max of the 2 * kN scores of one row (h) of this lane, as a tree.
template <int kN>
__device__ __forceinline__ float lean_row_max(const float (&s)[kN][4], int h) {
  float m[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) m[i] = fmaxf(s[i][2 * h], s[i][2 * h + 1]);
#pragma unroll
  for (int w = 1; w < kN; w *= 2)
#pragma unroll
    for (int i = 0; i + w < kN; i += 2 * w) m[i] = fmaxf(m[i], m[i + w]);
  return m[0];
}

// One tile of one warp: 16 * kChunks keys (64: a full tile; 16: a tail of at most 16 keys). kBias: the scores get
// the key bias row (the key mask in the log2 domain, -inf past Sk); kRowMask: the mask tile of this warp's rows
// (rows g, g + 8 at msk + row * kLeanLd, key pairs as 16-bit pairs). Each score becomes a value v whose log2-domain
// score is v * mul: raw scores (no mask, mul = scale * log2 e), scale * s + mask (row mask, mul = log2 e) or
// scale * log2 e * s + bias (key bias, mul = 1); the max is taken over v and p = 2^(v * mul - max) is one FFMA and
// one ex2.
template <class T, bool kBias, bool kRowMask, int kChunks>
__device__ __forceinline__ void lean_tile(LeanAcc& acc, const T* kb, const T* vb, const float* bias, const T* msk,
                                          float scale, float sl2) {
  using B = Bits16<T>;
  constexpr int kN = 2 * kChunks;  // 8-key accumulator tiles
  const float mul = kRowMask ? kLog2e : kBias ? 1.f : sl2;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float s[kN][4];
#pragma unroll
  for (int i = 0; i < kN; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kLeanD / 16; ++kk) {
#pragma unroll
    for (int np = 0; np < kChunks; ++np) {
      uint32_t b[4];
      ldsm_x4(b, kb + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kLeanLd + kk * 16 + ((lane >> 3) & 1) * 8);
      B::mma(s[2 * np], acc.qf[kk], b[0], b[1]);
      B::mma(s[2 * np + 1], acc.qf[kk], b[2], b[3]);
    }
  }

  if constexpr (kBias || kRowMask) {
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      float2 bb = make_float2(0.f, 0.f);
      if constexpr (kBias) bb = *reinterpret_cast<const float2*>(bias + i * 8 + 2 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (kRowMask) {
          const float2 mv =
              B::unpack(*reinterpret_cast<const typename B::Pair*>(msk + (g + 8 * h) * kLeanLd + i * 8 + 2 * t));
          s[i][2 * h] = fmaf(s[i][2 * h], scale, mv.x);
          s[i][2 * h + 1] = fmaf(s[i][2 * h + 1], scale, mv.y);
          if constexpr (kBias) {  // -inf past Sk (else 0)
            s[i][2 * h] += bb.x;
            s[i][2 * h + 1] += bb.y;
          }
        } else {
          s[i][2 * h] = fmaf(s[i][2 * h], sl2, bb.x);
          s[i][2 * h + 1] = fmaf(s[i][2 * h + 1], sl2, bb.y);
        }
      }
    }
  }
  float sub[2], alpha[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = lean_row_max<kN>(s, h);
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
    // The new running max in the log2 domain (mul > 0 keeps the order).
    const float mn = fmaxf(acc.m[h], mx * mul);
    sub[h] = mn == -INFINITY ? 0.f : mn;  // every score so far -inf: weights 0, the row is resolved at the end
    alpha[h] = ex2(acc.m[h] - sub[h]);    // m = -inf: 0
    acc.m[h] = mn;
  }
#pragma unroll
  for (int i = 0; i < kN; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      s[i][2 * h] = ex2(fmaf(s[i][2 * h], mul, -sub[h]));
      s[i][2 * h + 1] = ex2(fmaf(s[i][2 * h + 1], mul, -sub[h]));
    }
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n) {
    acc.o[n][0] *= alpha[0];
    acc.o[n][1] *= alpha[0];
    acc.o[n][2] *= alpha[1];
    acc.o[n][3] *= alpha[1];
  }
  acc.l[0] *= alpha[0];
  acc.l[2] *= alpha[1];

  // O += P V and l += P 1, P (16-bit) as A fragments straight from the score registers, V via ldmatrix .trans.
  constexpr uint32_t kOnes = LeanOnes<T>::kBits;
#pragma unroll
  for (int kk = 0; kk < kChunks; ++kk) {
    const uint32_t pa[4] = {B::pack(s[2 * kk][0], s[2 * kk][1]), B::pack(s[2 * kk][2], s[2 * kk][3]),
                            B::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]), B::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int dn = 0; dn < kLeanD / 16; ++dn) {
      uint32_t b[4];
      ldsm_x4_trans(b, vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLeanLd + dn * 16 + (lane >> 4) * 8);
      B::mma(acc.o[2 * dn], pa, b[0], b[1]);
      B::mma(acc.o[2 * dn + 1], pa, b[2], b[3]);
    }
    B::mma(acc.l, pa, kOnes, kOnes);
  }
}

// The key bias row (log2 domain) in shared memory, filled by the block's kThreads threads: the key mask row `mrow`
// (key stride `stride`, in global or shared memory) times log2 e (kKeyMask) or 0 for keys < Sk, -inf for the
// padding keys up to `keys`. Visible after the next barrier.
template <class T, bool kKeyMask, int kThreads>
__device__ __forceinline__ void fill_key_bias(float* bias, int keys, int sk, const T* mrow, int64_t stride) {
  for (int i = threadIdx.x; i < keys; i += kThreads) {
    float v = -INFINITY;
    if (i < sk) v = kKeyMask ? Bits16<T>::to_f(mrow[i * stride]) * kLog2e : 0.f;
    bias[i] = v;
  }
}
// The same for entry (b0, b1) of the attention's key mask.
template <class T, bool kKeyMask, int kThreads>
__device__ __forceinline__ void lean_fill_bias(float* bias, int keys, int sk, const AttentionArgs& a, int64_t b0,
                                               int64_t b1) {
  const T* mrow = kKeyMask ? static_cast<const T*>(a.mask) + b0 * a.ms[0] + b1 * a.ms[1] : nullptr;
  fill_key_bias<T, kKeyMask, kThreads>(bias, keys, sk, mrow, a.ms[3]);
}

// Normalises a warp's O (16 rows x 64 in the mma layout) by inv into the warp's 16 rows of a padded shared tile
// (osm, row stride kLeanLd: conflict-free 4-byte stores), then writes rows row0 + r < sq of `out` (row stride os2)
// with 16-byte stores.
template <class T>
__device__ __forceinline__ void lean_store_o(T* osm, const float (&o)[kLeanD / 8][4], const float (&inv)[2], T* out,
                                             int64_t os2, int row0, int sq) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<uint32_t*>(osm + (g + 8 * h) * kLeanLd + n * 8 + 2 * t) =
          Bits16<T>::pack(o[n][2 * h] * inv[h], o[n][2 * h + 1] * inv[h]);
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = lane + 32 * i, r = idx >> 3, c = (idx & 7) * 8;
    const int row = row0 + r;
    if (row < sq)
      *reinterpret_cast<uint4*>(out + int64_t(row) * os2 + c) = *reinterpret_cast<const uint4*>(osm + r * kLeanLd + c);
  }
}

template <class T, int kWarps, int kMode, int kMinBlocks>
__global__ void __launch_bounds__(32 * kWarps, kMinBlocks) attention_lean(AttentionArgs a) {
  using Sh = LeanShape<kWarps>;
  using B = Bits16<T>;
  constexpr int kRows = Sh::kRows, kThreads = Sh::kThreads;
  constexpr int kKV = kLeanKeys * kLeanLd;                                         // elements of one K or V tile
  constexpr int kStage = 2 * kKV + (kMode == kLeanRowMask ? kRows * kLeanLd : 0);  // K, V (, mask tile)
  extern __shared__ __align__(128) unsigned char smem[];
  T* qsm = reinterpret_cast<T*>(smem);
  T* stage0 = qsm + kRows * kLeanLd;  // stage s at stage0 + s * kStage

  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int ntiles = (sk + kLeanKeys - 1) / kLeanKeys;
  float* bias = reinterpret_cast<float*>(stage0 + (ntiles >= 2 ? 2 : 1) * kStage);
  const int q0 = blockIdx.x * kRows;
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, t = lane & 3;
  const int wr = warp * 16;
  const bool active = q0 + wr < sq;  // warp-uniform

  load_rows_async<T, kLeanD, kThreads>(qsm,
                                       static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1] + int64_t(q0) * a.qs[2],
                                       a.qs[2], kRows, min(kRows, sq - q0));
  // This thread's chunks of a K / V tile: column chunk tid % 8, rows tid / 8 + kRowStep * i.
  const int crow = tid >> 3, ccol = (tid & 7) * 8;
  const T* kg = static_cast<const T*>(a.k) + b0 * a.ks[0] + b1 * a.ks[1] + int64_t(crow) * a.ks[2] + ccol;
  const T* vg = static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1] + int64_t(crow) * a.vs[2] + ccol;
  const int64_t kstep = int64_t(Sh::kRowStep) * a.ks[2], vstep = int64_t(Sh::kRowStep) * a.vs[2];
  const int dst0 = crow * kLeanLd + ccol;
  // kLeanRowMask: this thread's chunks of the mask tile (the block's query rows x 64 keys), rows crow + kRowStep * i.
  const T* mg = nullptr;
  if constexpr (kMode == kLeanRowMask)
    mg = static_cast<const T*>(a.mask) + b0 * a.ms[0] + b1 * a.ms[1] + int64_t(q0 + crow) * a.ms[2] + ccol;
  const int64_t mstep = int64_t(Sh::kRowStep) * a.ms[2];
  // Copies tile j (called for j = 0, 1, ... in order: kg / vg advance by one tile per call). A partial tile is
  // zero-filled up to 16 rows (tail tiles of <= 16 keys) or 64: the mma read those rows.
  auto load_stage = [&](int j) {
    T* kd = stage0 + (j & 1) * kStage + dst0;
    const int valid = sk - j * kLeanKeys;
    const T* ks = kg;
    const T* vs = vg;
    if (valid >= kLeanKeys) {
#pragma unroll
      for (int i = 0; i < Sh::kCopies; ++i) {
        cp_async16_full(kd + i * Sh::kRowStep * kLeanLd, ks);
        cp_async16_full(kd + kKV + i * Sh::kRowStep * kLeanLd, vs);
        ks += kstep;
        vs += vstep;
      }
    } else {
      const int rows = valid <= 16 ? 16 : kLeanKeys;
#pragma unroll
      for (int i = 0; i < Sh::kCopies; ++i) {
        const int r = crow + i * Sh::kRowStep;
        if (r < rows) {
          const bool ok = r < valid;  // else zero-filled
          cp_async16(kd + i * Sh::kRowStep * kLeanLd, ok ? ks : kg, ok);
          cp_async16(kd + kKV + i * Sh::kRowStep * kLeanLd, ok ? vs : vg, ok);
        }
        ks += kstep;
        vs += vstep;
      }
    }
    kg += kstep * Sh::kCopies;
    vg += vstep * Sh::kCopies;
    if constexpr (kMode == kLeanRowMask) {
      // Mask chunks (8 keys; Sk % 8 == 0) past Sk or of rows past Sq are zero-filled.
      T* md = stage0 + (j & 1) * kStage + 2 * kKV + dst0;
      const T* ms = mg + j * kLeanKeys;
      const bool col_ok = j * kLeanKeys + ccol < sk;
#pragma unroll
      for (int i = 0; i < kRows / Sh::kRowStep; ++i) {
        const bool ok = col_ok && q0 + crow + i * Sh::kRowStep < sq;
        cp_async16(md + i * Sh::kRowStep * kLeanLd, ok ? ms : mg, ok);
        ms += mstep;
      }
    }
  };
  load_stage(0);
  cp_async_commit();

  lean_fill_bias<T, kMode == kLeanKeyMask, kThreads>(bias, ntiles * kLeanKeys, sk, a, b0, b1);
  const float sl2 = a.scale * kLog2e;

  LeanAcc acc;
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n) acc.o[n][0] = acc.o[n][1] = acc.o[n][2] = acc.o[n][3] = 0.f;
  acc.l[0] = acc.l[1] = acc.l[2] = acc.l[3] = 0.f;
  acc.m[0] = acc.m[1] = -INFINITY;

  constexpr bool kKeyBias = kMode == kLeanKeyMask, kRowMask = kMode == kLeanRowMask;
  for (int j = 0; j < ntiles; ++j) {
    if (j + 1 < ntiles) load_stage(j + 1);
    cp_async_commit();
    cp_async_wait<1>();  // everything but stage j + 1 has landed
    __syncthreads();
    if (active) {
      if (j == 0) {
#pragma unroll
        for (int kk = 0; kk < kLeanD / 16; ++kk)
          ldsm_x4(acc.qf[kk], qsm + (wr + (lane & 15)) * kLeanLd + kk * 16 + (lane >> 4) * 8);
      }
      const T* kb = stage0 + (j & 1) * kStage;
      const T* msk = kb + 2 * kKV + wr * kLeanLd;
      const float* bj = bias + j * kLeanKeys;
      const int valid = sk - j * kLeanKeys;
      if (valid >= kLeanKeys)
        lean_tile<T, kKeyBias, kRowMask, 4>(acc, kb, kb + kKV, bj, msk, a.scale, sl2);
      else if (valid <= 16)
        lean_tile<T, true, kRowMask, 1>(acc, kb, kb + kKV, bj, msk, a.scale, sl2);
      else
        lean_tile<T, true, kRowMask, 4>(acc, kb, kb + kKV, bj, msk, a.scale, sl2);
    }
    __syncthreads();  // stage j & 1 is refilled by the next iteration's copy of stage j + 2
  }
  cp_async_wait<0>();
  if (!active) return;

  // Rows whose scores were all -inf: the mean of V over the keys (this lane's columns), or zeros.
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) inv[h] = acc.m[h] == -INFINITY ? 0.f : 1.f / acc.l[2 * h];
  if (__any_sync(kFull, acc.m[0] == -INFINITY || acc.m[1] == -INFINITY) && !a.zero_masked_rows) {
    const T* v = static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1];
#pragma unroll
    for (int n = 0; n < kLeanD / 8; ++n) {
      float s0 = 0.f, s1 = 0.f;
#pragma unroll 1
      for (int key = 0; key < sk; ++key) {
        s0 += B::to_f(v[int64_t(key) * a.vs[2] + n * 8 + 2 * t]);
        s1 += B::to_f(v[int64_t(key) * a.vs[2] + n * 8 + 2 * t + 1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (acc.m[h] == -INFINITY) {
          acc.o[n][2 * h] = s0;
          acc.o[n][2 * h + 1] = s1;
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (acc.m[h] == -INFINITY) inv[h] = 1.f / float(sk);
  }

  // Normalise into the warp's own rows of the Q buffer, then 16-byte row stores.
  lean_store_o<T>(qsm + wr * kLeanLd, acc.o, inv, static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1], a.os[2], q0 + wr,
                  sq);
}

// Whether the lean kernel takes these arguments (see the header comment); the caller has checked attention_uses_mma.
// A mask with a row per query is taken when its rows move as 16-byte chunks of 8 keys (unit key stride, 16-byte
// aligned rows, Sk % 8 == 0).
inline bool lean_row_mask_ok(const AttentionArgs& a) {
  return a.ms[3] == 1 && a.ms[0] % 8 == 0 && a.ms[1] % 8 == 0 && a.ms[2] % 8 == 0 && a.sk % 8 == 0 &&
         aligned(a.mask, 16);
}
inline bool lean_supports(const AttentionArgs& a) {
  return a.d == kLeanD && a.dv == kLeanD && a.sk >= 1 && a.sk <= kLeanMaxKeys && a.scale > 0.f && rows16(a.o, a.os) &&
         (!a.mask || a.ms[2] == 0 || lean_row_mask_ok(a));
}

// Launches kernel(a) on (ceil(Sq / rows), b1, b0) blocks of `threads` threads with `bytes` of dynamic shared memory
// (the lean, short and wgmma kernels).
template <class Kernel>
int launch_attention_rows(Kernel kernel, size_t bytes, int rows, int threads, const AttentionArgs& a, StreamT stream) {
  const cudaError_t st = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (st != cudaSuccess) return static_cast<int>(st);
  const dim3 grid(static_cast<unsigned>((a.sq + rows - 1) / rows), static_cast<unsigned>(a.b1),
                  static_cast<unsigned>(a.b0));
  kernel<<<grid, threads, bytes, reinterpret_cast<cudaStream_t>(stream)>>>(a);
  return launch_common::launch_status();
}

template <class T, int kWarps, int kMode>
int launch_lean_mask(const AttentionArgs& a, StreamT stream) {
  using Sh = LeanShape<kWarps>;
  constexpr int kMinBlocks = 65536 / (128 * Sh::kThreads);  // 128 registers per thread
  return launch_attention_rows(attention_lean<T, kWarps, kMode, kMinBlocks>, Sh::bytes(a.sk, kMode == kLeanRowMask),
                               Sh::kRows, Sh::kThreads, a, stream);
}

template <class T, int kWarps>
int launch_lean(const AttentionArgs& a, StreamT stream) {
  if (!a.mask) return launch_lean_mask<T, kWarps, kLeanNoMask>(a, stream);
  return a.ms[2] == 0 ? launch_lean_mask<T, kWarps, kLeanKeyMask>(a, stream)
                      : launch_lean_mask<T, kWarps, kLeanRowMask>(a, stream);
}

// Launches the lean kernel with 4 or 8 warps per block (lean_supports must hold). Defined in attention_fa2_lean.cu.
int lean_launch_f16(const AttentionArgs& a, int warps, StreamT stream);
int lean_launch_bf16(const AttentionArgs& a, int warps, StreamT stream);

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
