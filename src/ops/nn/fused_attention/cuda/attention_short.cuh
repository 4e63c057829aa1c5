// The fourth mma.sync attention kernel ("short"): the lean kernel's building blocks (attention_fa2_lean.cuh)
// for short key ranges (Sk <= 256: BERT-base S 128, ViT-B/16 S 197), where the whole key range fits in shared memory
// and every score of a warp's 16 query rows fits in its registers. ncu of the lean kernel at ViT b32 (H100, session
// 11): latency-bound (0.79 eligible warps per scheduler, issue slots 38 % busy, L2 48 %), ~390 instructions per warp
// and 64-key tile of which 68 mma, two block barriers per tile, and a chain mma -> max -> exp -> mma per tile. Here:
//   - Q, K and V are copied once (cp.async, 16-byte chunks, each thread at fixed offsets): Q and K in one group, V
//     in the next, so S = Q K^T and the softmax run while V is in flight; two block barriers in all;
//   - S for all keys at once (kChunks 16-key chunks, a compile-time count: no branch between the chunks' mma chains),
//     then a single row max, exp and O = P V: no running max, no rescaling of O, kChunks independent mma chains per
//     phase. Versus the lean kernel (same H100): ViT b32 25.8 against 27.3 us, b1 4.2 against 5.0; BERT b1 3.55
//     against 4.15, b32 13.0 against 13.1;
//   - a key mask is a key bias (times log2 e, -inf past Sk) in shared memory as float32, one FFMA per score with the
//     scale; without a mask only the last two chunks (the ones that may hold keys past Sk) add the bias (0 / -inf);
//   - the row sums come from the tensor cores (P times a column of ones), as in the lean kernel;
//   - O goes through the warp's rows of the Q buffer in shared memory and leaves as 16-byte row stores.
// A row whose keys are all -inf gets the mean of V over the keys (from shared memory; zeros with zero_masked_rows).
// Preconditions (short_supports): those of the lean kernel, Sk within one of the key ranges it is built for
// (kShortChunkCounts: 97-128, 177-208 or 225-256 keys), no mask or one that broadcasts over the queries (query stride
// 0).
#pragma once
#include <type_traits>

#include "ops/nn/fused_attention/cuda/attention_fa2_lean.cuh"

// 1: float16 attention computes exp of score pairs with ex2.approx.f16x2 (short_softmax); 0 (default): float32 ex2
// per score. Measured on an H100 (2026-11-23): the pairs were slower (ViT b32 wg2 21.1 -> 23.6 us, BERT b32
// 9.8 -> 10.1 us; presumably, not profiled, the packing and unpacking cost more than the halved MUFU work saves),
// both within the tolerances.
#ifndef KILNRT_ATTENTION_HALF_EXP
#define KILNRT_ATTENTION_HALF_EXP 0
#endif

namespace kilnrt::cuda::kernels::attention_mma_detail {

// Key ranges the kernel is built for: kChunks 16-key chunks, of which the last kShortPadChunks may be zero-filled
// (their keys get the -inf bias). Exact chunk counts keep every chunk's mma chain free of branches: with a runtime
// check per chunk the compiler cannot interleave the chains of different chunks (H100, 2026-11-23: 34.5 us against the
// lean kernel's 27.3 at ViT b32 with such checks).
constexpr int kShortChunkCounts[] = {8, 13, 16};
constexpr int kShortPadChunks = 1;

template <int kWarps, int kChunks>
struct ShortShape {
  static constexpr int kThreads = 32 * kWarps, kRows = 16 * kWarps, kKeys = 16 * kChunks;
  // Q rows, K and V rows for the padded key range, the bias row.
  static constexpr size_t kBytes = (size_t(kRows) + 2 * kKeys) * kLeanLd * 2 + kKeys * sizeof(float);
};

// Copies rows [0, kRows) of 64 elements (row stride rs; kRows a multiple of kThreads / 8) into shared memory with
// cp.async; rows >= valid are zero-filled. Each thread moves 16-byte chunk tid % 8 of rows tid / 8 + (kThreads / 8) i
// to dst + offset(row, chunk) bytes: padded rows for the short kernel, the 128-byte swizzle for the wgmma kernel.
template <class T, int kThreads, int kRows, class Offset>
__device__ __forceinline__ void short_copy_rows(unsigned char* dst, const T* src, int64_t rs, int valid,
                                                Offset offset) {
  constexpr int kStep = kThreads / 8;
  static_assert(kRows % kStep == 0, "whole copy steps");
  const int crow = threadIdx.x >> 3, chunk = threadIdx.x & 7;
  const T* p = src + int64_t(crow) * rs + chunk * 8;
  const int64_t step = int64_t(kStep) * rs;
#pragma unroll
  for (int i = 0; i < kRows / kStep; ++i) {
    const int r = crow + i * kStep;
    const bool ok = r < valid;
    cp_async16(dst + offset(r, chunk), ok ? p : src, ok);
    p += step;
  }
}

// Byte offset of chunk `chunk` (8 elements) of row `row` in the short kernel's padded tiles (row stride kLeanLd).
__device__ __forceinline__ uint32_t short_padded(int row, int chunk) {
  return uint32_t(row) * (kLeanLd * 2) + uint32_t(chunk) * 16;
}

// S = Q K^T over all kChunks key chunks, s zeroed by the caller (kb: this lane's ldmatrix row of chunk 0).
template <class T, int kChunks>
__device__ __forceinline__ void short_qk(float (&s)[2 * kChunks][4], const uint32_t (&qf)[kLeanD / 16][4],
                                         const T* kb) {
#pragma unroll
  for (int kk = 0; kk < kLeanD / 16; ++kk)
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      uint32_t b[4];
      ldsm_x4(b, kb + c * 16 * kLeanLd + kk * 16);
      Bits16<T>::mma(s[2 * c], qf[kk], b[0], b[1]);
      Bits16<T>::mma(s[2 * c + 1], qf[kk], b[2], b[3]);
    }
}

// O += P V and l += P 1 over all kChunks key chunks (vb: this lane's ldmatrix .trans row of chunk 0).
template <class T, int kChunks>
__device__ __forceinline__ void short_pv(float (&o)[kLeanD / 8][4], float (&l)[4], const uint32_t (&pa)[kChunks][4],
                                         const T* vb) {
  constexpr uint32_t kOnes = LeanOnes<T>::kBits;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
#pragma unroll
    for (int dn = 0; dn < kLeanD / 16; ++dn) {
      uint32_t b[4];
      ldsm_x4_trans(b, vb + c * 16 * kLeanLd + dn * 16);
      Bits16<T>::mma(o[2 * dn], pa[c], b[0], b[1]);
      Bits16<T>::mma(o[2 * dn + 1], pa[c], b[2], b[3]);
    }
    Bits16<T>::mma(l, pa[c], kOnes, kOnes);
  }
}

// The softmax of a warp's 16 rows over the whole key range (the short and wgmma kernels): the key bias (every chunk
// with a key mask, else the chunks that may hold keys past Sk), the row max of rows g and g + 8 (two shuffles across
// a row's four lanes), and P as 16-bit A fragments. Each score becomes v with log2-domain score v * mul: the raw
// score (no mask, mul = scale * log2 e; the tail chunks add their 0 / -inf bias) or scale * log2 e * s + bias (key
// mask, mul = 1). mx: the row max in the log2 domain, -inf for a row whose keys are all -inf (its P is 0). kSums:
// the float32 row sums of P are added to l (else the caller takes them from the tensor cores).
template <class T, int kChunks, bool kKeyMask, bool kSums>
__device__ __forceinline__ void short_softmax(float (&s)[2 * kChunks][4], const float* bias, float sl2, float mul,
                                              float (&mx)[2], uint32_t (&pa)[kChunks][4], float (&l)[2]) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    if (!kKeyMask && c < kChunks - 1 - kShortPadChunks) continue;  // no key past Sk there
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const float2 bb = *reinterpret_cast<const float2*>(bias + c * 16 + j * 8 + 2 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float& x0 = s[2 * c + j][2 * h];
        float& x1 = s[2 * c + j][2 * h + 1];
        if constexpr (kKeyMask) {
          x0 = fmaf(x0, sl2, bb.x);
          x1 = fmaf(x1, sl2, bb.y);
        } else {
          x0 += bb.x;
          x1 += bb.y;
        }
      }
    }
  }
  float sub[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = lean_row_max<2 * kChunks>(s, h);
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 1));
    m = fmaxf(m, __shfl_xor_sync(kFull, m, 2));
    mx[h] = m * mul;                            // mul > 0 keeps the order; -inf stays -inf
    sub[h] = mx[h] == -INFINITY ? 0.f : mx[h];  // every key -inf: weights 0, the row is resolved at the end
  }
  if constexpr (std::is_same_v<T, __half> && KILNRT_ATTENTION_HALF_EXP) {
    // float16 P: the exponent of a pair in one f16x2 instruction (half the MUFU work; P is rounded to float16 for
    // the P V product anyway). The argument is rounded to float16 first: relative error < 2^-11 * |v| * ln 2 on
    // p = 2^v, under 3e-3 for the p > 2^-8 that carry the row. Row sums: the pairs of two keys added in float16
    // (one rounding), then in float32.
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t pr[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          pr[j] = ex2_half2(
              Bits16<T>::pack(fmaf(s[2 * c + j][2 * h], mul, -sub[h]), fmaf(s[2 * c + j][2 * h + 1], mul, -sub[h])));
          pa[c][2 * j + h] = pr[j];
        }
        if constexpr (kSums) {
          const __half2 q =
              __hadd2(*reinterpret_cast<const __half2*>(&pr[0]), *reinterpret_cast<const __half2*>(&pr[1]));
          const float2 f = __half22float2(q);
          l[h] += f.x + f.y;
        }
      }
  } else {
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float p0 = ex2(fmaf(s[2 * c + j][2 * h], mul, -sub[h]));
          const float p1 = ex2(fmaf(s[2 * c + j][2 * h + 1], mul, -sub[h]));
          if constexpr (kSums) l[h] += p0 + p1;
          pa[c][2 * j + h] = Bits16<T>::pack(p0, p1);
        }
  }
}

// Rows whose scores were all -inf (mx = -inf) get the mean of V over the keys (this lane's columns n * 8 + 2t,
// + 1), unless zero_masked_rows (then inv stays 0: zeros). vpair(key, n): those two columns of V's row `key`.
template <class T, class VPair>
__device__ __forceinline__ void short_masked_rows(float (&o)[kLeanD / 8][4], float (&inv)[2], const float (&mx)[2],
                                                  int sk, int zero_masked_rows, VPair vpair) {
  using B = Bits16<T>;
  if (!__any_sync(kFull, mx[0] == -INFINITY || mx[1] == -INFINITY) || zero_masked_rows) return;
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n) {
    float s0 = 0.f, s1 = 0.f;
#pragma unroll 1
    for (int key = 0; key < sk; ++key) {
      const float2 vv = B::unpack(*reinterpret_cast<const typename B::Pair*>(vpair(key, n)));
      s0 += vv.x;
      s1 += vv.y;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (mx[h] == -INFINITY) {
        o[n][2 * h] = s0;
        o[n][2 * h + 1] = s1;
      }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (mx[h] == -INFINITY) inv[h] = 1.f / float(sk);
}

template <class T, int kWarps, int kChunks, bool kKeyMask, int kMinBlocks>
__global__ void __launch_bounds__(32 * kWarps, kMinBlocks) attention_short(AttentionArgs a) {
  using Sh = ShortShape<kWarps, kChunks>;
  using B = Bits16<T>;
  constexpr int kRows = Sh::kRows, kThreads = Sh::kThreads, kN = 2 * kChunks, kKeys = Sh::kKeys;
  extern __shared__ __align__(128) unsigned char smem[];
  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  T* qsm = reinterpret_cast<T*>(smem);
  T* ksm = qsm + kRows * kLeanLd;
  T* vsm = ksm + kKeys * kLeanLd;
  float* bias = reinterpret_cast<float*>(vsm + kKeys * kLeanLd);

  const int q0 = blockIdx.x * kRows;
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, t = lane & 3;
  const int wr = warp * 16;
  const bool active = q0 + wr < sq;  // warp-uniform

  // Two copy groups: Q and K, then V (S = Q K^T and the softmax run while V is in flight). Splitting K and V into
  // halves, each waited for before its first use, was slower (H100, 2026-11-23: ViT b32 26.5 against 25.8 us, BERT b32
  // 14.3 against 13.0): the two extra block barriers cost more than the overlap gains.
  const T* kg = static_cast<const T*>(a.k) + b0 * a.ks[0] + b1 * a.ks[1];
  const T* vg = static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1];
  short_copy_rows<T, kThreads, kRows>(reinterpret_cast<unsigned char*>(qsm),
                                      static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1] + int64_t(q0) * a.qs[2],
                                      a.qs[2], sq - q0, short_padded);
  short_copy_rows<T, kThreads, kKeys>(reinterpret_cast<unsigned char*>(ksm), kg, a.ks[2], sk, short_padded);
  cp_async_commit();
  short_copy_rows<T, kThreads, kKeys>(reinterpret_cast<unsigned char*>(vsm), vg, a.vs[2], sk, short_padded);
  cp_async_commit();
  lean_fill_bias<T, kKeyMask, kThreads>(bias, kKeys, sk, a, b0, b1);
  const float sl2 = a.scale * kLog2e;
  const float mul = kKeyMask ? 1.f : sl2;  // see short_softmax

  float s[kN][4];
  uint32_t qf[kLeanD / 16][4];
  const T* kb = ksm + ((lane & 7) + ((lane >> 4) << 3)) * kLeanLd + ((lane >> 3) & 1) * 8;
  cp_async_wait<1>();  // Q and K
  __syncthreads();
  float mx[2] = {-INFINITY, -INFINITY};
  // P (16-bit) as A fragments for every chunk (half the registers of the scores).
  uint32_t pa[kChunks][4];
  if (active) {
#pragma unroll
    for (int kk = 0; kk < kLeanD / 16; ++kk)
      ldsm_x4(qf[kk], qsm + (wr + (lane & 15)) * kLeanLd + kk * 16 + (lane >> 4) * 8);
#pragma unroll
    for (int i = 0; i < kN; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
    short_qk<T, kChunks>(s, qf, kb);
    float no_sums[2];  // the row sums come from the tensor cores (short_pv)
    short_softmax<T, kChunks, kKeyMask, false>(s, bias, sl2, mul, mx, pa, no_sums);
  }
  // O = P V and l = P 1, V via ldmatrix .trans.
  float o[kLeanD / 8][4], l[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const T* vb = vsm + ((lane & 7) + ((lane >> 3) & 1) * 8) * kLeanLd + (lane >> 4) * 8;
  cp_async_wait<0>();  // V
  __syncthreads();
  if (!active) return;
  short_pv<T, kChunks>(o, l, pa, vb);

  // Rows whose scores were all -inf: the mean of V over the keys (this lane's columns), or zeros.
  float inv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) inv[h] = mx[h] == -INFINITY ? 0.f : 1.f / l[2 * h];
  short_masked_rows<T>(o, inv, mx, sk, a.zero_masked_rows,
                       [&](int key, int n) { return vsm + key * kLeanLd + n * 8 + 2 * t; });

  // Normalise into the warp's own rows of the Q buffer, then 16-byte row stores.
  lean_store_o<T>(qsm + wr * kLeanLd, o, inv, static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1], a.os[2], q0 + wr, sq);
}

// The chunk count of the build that takes Sk keys, or 0 (Sk is not within kShortPadChunks chunks of one of them).
inline int short_chunks(int64_t sk) {
  for (int c : kShortChunkCounts)
    if (sk <= 16 * c && sk > 16 * (c - 1 - kShortPadChunks)) return c;
  return 0;
}

// Whether the short kernel takes these arguments (the caller has checked attention_uses_mma).
inline bool short_supports(const AttentionArgs& a) {
  return lean_supports(a) && short_chunks(a.sk) > 0 && (!a.mask || a.ms[2] == 0);
}

template <class T, int kWarps, int kChunks, bool kKeyMask>
int launch_short_mask(const AttentionArgs& a, StreamT stream) {
  using Sh = ShortShape<kWarps, kChunks>;
  // Registers: 128 per thread up to 8 chunks (4 blocks of 4 warps per SM), else 168 (3 blocks: the shared memory of
  // a 208-key range allows no more).
  constexpr int kMinBlocks = 65536 / ((kChunks <= 8 ? 128 : 168) * Sh::kThreads);
  return launch_attention_rows(attention_short<T, kWarps, kChunks, kKeyMask, (kMinBlocks < 1 ? 1 : kMinBlocks)>,
                               Sh::kBytes, Sh::kRows, Sh::kThreads, a, stream);
}

template <class T, int kWarps, int kChunks>
int launch_short_chunks(const AttentionArgs& a, StreamT stream) {
  return a.mask ? launch_short_mask<T, kWarps, kChunks, true>(a, stream)
                : launch_short_mask<T, kWarps, kChunks, false>(a, stream);
}

template <class T, int kWarps>
int launch_short(const AttentionArgs& a, StreamT stream) {
  static_assert(sizeof(kShortChunkCounts) / sizeof(int) == 3, "one launch per chunk count");
  switch (short_chunks(a.sk)) {
    case kShortChunkCounts[0]: return launch_short_chunks<T, kWarps, kShortChunkCounts[0]>(a, stream);
    case kShortChunkCounts[1]: return launch_short_chunks<T, kWarps, kShortChunkCounts[1]>(a, stream);
    case kShortChunkCounts[2]: return launch_short_chunks<T, kWarps, kShortChunkCounts[2]>(a, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

// Launches the short kernel with 4 warps per block (short_supports must hold). Defined in attention_short.cu.
int short_launch_f16(const AttentionArgs& a, StreamT stream);
int short_launch_bf16(const AttentionArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
