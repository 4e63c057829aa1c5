// FlashAttention-2-style fused attention (see attention_mma.h): the dispatch between the first kernel ("v1", below)
// and the configurations of the second (attention_fa2.cuh), and the first kernel itself.
// v1: a block of kWarps warps owns 16 * kWarps query rows
// of one (b0, b1) entry; each warp owns 16 rows and walks all keys in tiles of 64:
//   - Q: copied once to shared memory (cp.async), then held in registers as mma A fragments (ldmatrix);
//   - K / V tiles: double-buffered in shared memory with 16-byte cp.async (rows past Sk zero-filled), so the copy of
//     tile j + 1 overlaps the math of tile j;
//   - S = Q K^T with mma.sync m16n8k16 (K rows via ldmatrix as the col-major B operand), float32 accumulators;
//   - online softmax on the accumulators in registers, in the log2 domain (exp2f, scale * log2(e)); each row's four
//     lanes reduce the tile max with two shuffles, the row sum stays per lane until the end;
//   - P is rounded to 16 bits in registers and is the A operand of O += P V (V via ldmatrix .trans);
//   - O is divided by the row sum at the end and stored through the output strides.
// A row whose scores are all -inf gets uniform weights (zeros with zero_masked_rows), as the other kernels do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ops/nn/fused_attention/cuda/attention_mma.h"
#include "ops/nn/fused_attention/cuda/attention_fa2.cuh"
#include "ops/nn/fused_attention/cuda/attention_fa2_lean.cuh"
#include "cuda/kernels/mma_ptx.cuh"
#include "ops/nn/fused_attention/cuda/attention_short.cuh"
#include "ops/nn/fused_attention/cuda/attention_wgmma.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

using namespace attention_mma_detail;

constexpr int kKeyTile = 64;  // keys per shared-memory tile

template <class T, int D, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) attention_fa2(AttentionArgs a, int flags) {
  using B = Bits16<T>;
  constexpr int kThreads = kWarps * 32, kRows = kWarps * 16, kLd = D + 8;
  static_assert(D % 16 == 0 && D <= 128, "head size");
  extern __shared__ __align__(128) unsigned char smem[];
  T* qsm = reinterpret_cast<T*>(smem);
  T* ksm = qsm + kRows * kLd;         // [2][kKeyTile][kLd]
  T* vsm = ksm + 2 * kKeyTile * kLd;  // [2][kKeyTile][kLd]

  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int q0 = blockIdx.x * kRows;
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;
  const T* q = static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1] + int64_t(q0) * a.qs[2];
  const T* k = static_cast<const T*>(a.k) + b0 * a.ks[0] + b1 * a.ks[1];
  const T* v = static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int ntiles = (sk + kKeyTile - 1) / kKeyTile;

  load_rows_async<T, D, kThreads>(qsm, q, a.qs[2], kRows, min(kRows, sq - q0));
  auto load_kv = [&](int j) {
    const int kt = j * kKeyTile, valid = min(kKeyTile, sk - kt);
    load_rows_async<T, D, kThreads>(ksm + (j & 1) * kKeyTile * kLd, k + int64_t(kt) * a.ks[2], a.ks[2], kKeyTile,
                                    valid);
    load_rows_async<T, D, kThreads>(vsm + (j & 1) * kKeyTile * kLd, v + int64_t(kt) * a.vs[2], a.vs[2], kKeyTile,
                                    valid);
  };
  if (ntiles > 0) load_kv(0);
  cp_async_commit();

  // This lane's two query rows: g and g + 8 of the warp's 16.
  const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
  const T* mbase = a.mask ? static_cast<const T*>(a.mask) + b0 * a.ms[0] + b1 * a.ms[1] : nullptr;
  const T* mrow[2] = {mbase && r0 < sq ? mbase + int64_t(r0) * a.ms[2] : nullptr,
                      mbase && r1 < sq ? mbase + int64_t(r1) * a.ms[2] : nullptr};
  const int64_t mcs = a.ms[3];
  const bool mpair = flags & kPairMask;
  const float sl2 = a.scale * kLog2e;

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  uint32_t qf[D / 16][4];

  for (int j = 0; j < ntiles; ++j) {
    if (j + 1 < ntiles) load_kv(j + 1);
    cp_async_commit();
    cp_async_wait<1>();  // everything but tile j + 1 has landed
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        ldsm_x4(qf[kk], qsm + (warp * 16 + (lane & 15)) * kLd + kk * 16 + (lane >> 4) * 8);
    }
    const T* kb = ksm + (j & 1) * kKeyTile * kLd;
    const T* vb = vsm + (j & 1) * kKeyTile * kLd;

    // S = Q K^T: 16 rows x 64 keys per warp, 8 accumulator tiles of 16 x 8.
    float s[kKeyTile / 8][4];
#pragma unroll
    for (int i = 0; i < kKeyTile / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kKeyTile / 16; ++np) {
        uint32_t b[4];
        ldsm_x4(b, kb + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kLd + kk * 16 + ((lane >> 3) & 1) * 8);
        B::mma(s[2 * np], qf[kk], b[0], b[1]);
        B::mma(s[2 * np + 1], qf[kk], b[2], b[3]);
      }
    }

    // Scale (log2 domain), mask, tail keys -> -inf; the tile max of each row.
    const int kt = j * kKeyTile;
    const bool tail = kt + kKeyTile > sk;
    float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int i = 0; i < kKeyTile / 8; ++i) {
      const int key = kt + i * 8 + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x0 = s[i][2 * h] * sl2, x1 = s[i][2 * h + 1] * sl2;
        if (mrow[h]) {
          const float2 mv = mask_pair(mrow[h], key, mcs, mpair, sk);
          x0 = fmaf(mv.x, kLog2e, x0);
          x1 = fmaf(mv.y, kLog2e, x1);
        }
        if (tail) {
          if (key >= sk) x0 = -INFINITY;
          if (key + 1 >= sk) x1 = -INFINITY;
        }
        s[i][2 * h] = x0;
        s[i][2 * h + 1] = x1;
        mt[h] = fmaxf(mt[h], fmaxf(x0, x1));
      }
    }
    // Online softmax update per row; while every score so far is -inf the weights are 1 for valid keys.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mt[h] = fmaxf(mt[h], __shfl_xor_sync(kFull, mt[h], 1));
      mt[h] = fmaxf(mt[h], __shfl_xor_sync(kFull, mt[h], 2));
      const float mn = fmaxf(m[h], mt[h]);
      const bool none = mn == -INFINITY;
      const float alpha = none ? 1.f : exp2f(m[h] - mn);  // m = -inf, mn finite: 0
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kKeyTile / 8; ++i) {
        const int key = kt + i * 8 + 2 * t;
        const float p0 = none ? (key < sk ? 1.f : 0.f) : exp2f(s[i][2 * h] - mn);
        const float p1 = none ? (key + 1 < sk ? 1.f : 0.f) : exp2f(s[i][2 * h + 1] - mn);
        s[i][2 * h] = p0;
        s[i][2 * h + 1] = p1;
        sum += p0 + p1;
      }
      l[h] = l[h] * alpha + sum;
      m[h] = mn;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][2 * h] *= alpha;
        o[n][2 * h + 1] *= alpha;
      }
    }

    // O += P V: P (16 x 64, 16-bit) as A fragments straight from the S accumulators.
#pragma unroll
    for (int kk = 0; kk < kKeyTile / 16; ++kk) {
      const uint32_t pa[4] = {B::pack(s[2 * kk][0], s[2 * kk][1]), B::pack(s[2 * kk][2], s[2 * kk][3]),
                              B::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]), B::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        uint32_t b[4];
        ldsm_x4_trans(b, vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + dn * 16 + (lane >> 4) * 8);
        B::mma(o[2 * dn], pa, b[0], b[1]);
        B::mma(o[2 * dn + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();  // buffer j & 1 is refilled by the next iteration's copy of tile j + 2
  }
  cp_async_wait<0>();

  // Normalise and store.
  const bool pair_out = flags & kPairOut;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float lt = l[h];
    lt += __shfl_xor_sync(kFull, lt, 1);
    lt += __shfl_xor_sync(kFull, lt, 2);
    const int row = h ? r1 : r0;
    if (row >= sq) continue;
    const float inv = lt > 0.f && !(a.zero_masked_rows && m[h] == -INFINITY) ? 1.f / lt : 0.f;
    T* out = static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1] + int64_t(row) * a.os[2];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int c = n * 8 + 2 * t;
      const float y0 = o[n][2 * h] * inv, y1 = o[n][2 * h + 1] * inv;
      if (pair_out) {
        *reinterpret_cast<uint32_t*>(out + c) = B::pack(y0, y1);
      } else {
        const uint32_t pk = B::pack(y0, y1);
        const T* e = reinterpret_cast<const T*>(&pk);
        out[c * a.os[3]] = e[0];
        out[(c + 1) * a.os[3]] = e[1];
      }
    }
  }
}

template <int D, int kWarps>
constexpr size_t smem_bytes() {
  return 2 * size_t(kWarps * 16 + 4 * kKeyTile) * (D + 8);
}

template <class T, int D, int kWarps>
int launch_fa2(const AttentionArgs& a, StreamT stream) {
  constexpr int kRows = kWarps * 16;
  const size_t bytes = smem_bytes<D, kWarps>();
  auto kernel = attention_fa2<T, D, kWarps>;
  const cudaError_t st = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (st != cudaSuccess) return static_cast<int>(st);
  const int flags = (pairs4(a.o, a.os) ? kPairOut : 0) | (a.mask && pairs4(a.mask, a.ms) ? kPairMask : 0);
  const dim3 grid(static_cast<unsigned>((a.sq + kRows - 1) / kRows), static_cast<unsigned>(a.b1),
                  static_cast<unsigned>(a.b0));
  kernel<<<grid, kWarps * 32, bytes, reinterpret_cast<cudaStream_t>(stream)>>>(a, flags);
  return launch_status();
}

// Query rows per block: 64 (4 warps). Measured on an H100 (2026-11-22; bench/results/README.md) against 16, 32
// and 128 rows at BERT (S 128) and ViT (S 197) shapes, batch 1 and 32: 64 is fastest everywhere, at batch 1 too
// (12 heads: smaller tiles give more blocks but not a shorter key loop per block).
constexpr int kWarpsPerBlock = 4;

template <class T, int D>
int launch_d(const AttentionArgs& a, StreamT stream) {
  return launch_fa2<T, D, kWarpsPerBlock>(a, stream);
}

template <class T>
int launch_t(const AttentionArgs& a, StreamT stream) {
  switch (a.d) {
    case 32: return launch_d<T, 32>(a, stream);
    case 64: return launch_d<T, 64>(a, stream);
    case 128: return launch_d<T, 128>(a, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

bool attention_uses_mma(const AttentionArgs& a) {
  if (a.dt != 1 && a.dt != 2) return false;
  if (a.d != a.dv || (a.d != 32 && a.d != 64 && a.d != 128)) return false;
  if (a.b0 < 1 || a.b0 > 65535 || a.b1 < 1 || a.b1 > 65535 || a.sq < 1 || a.sk < 0) return false;
  if (a.sq > INT_MAX - 128 || a.sk > INT_MAX - 256) return false;
  return rows16(a.q, a.qs) && rows16(a.k, a.ks) && rows16(a.v, a.vs);
}

// The lean kernel (attention_fa2_lean.cuh) with 4 / 8 warps per block: variants 1 + kFa2ConfigCount + i.
constexpr const char* kLeanNames[] = {"lean4", "lean8"};
constexpr int kLeanWarps[] = {4, 8};
constexpr int kLeanCount = 2;
// The short kernel (attention_short.cuh), then the wgmma kernel (attention_wgmma.cuh), the last variants. "wg" /
// "wg2": one / two 64-row tiles per block; "wgs": up to four tiles of one (b0, b1) entry per block, Q streamed.
constexpr int kShortVariant = 1 + kFa2ConfigCount + kLeanCount, kWgVariant = kShortVariant + 1,
              kWg2Variant = kWgVariant + 1, kWgsVariant = kWg2Variant + 1;

int attention_mma_variant_count() { return kWgsVariant + 1; }

// Whether the wgmma kernel can run on the current device: built for sm_90a, and a device of compute capability 9.0
// (cached per device ordinal; false without a usable device).
bool attention_wgmma_runs_here() {
  if (!wg_built()) return false;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return false;
  constexpr int kDevices = 64;
  static std::atomic<signed char> known[kDevices] = {};  // 0 unknown, 1 yes, -1 no
  if (dev < kDevices && known[dev].load() != 0) return known[dev].load() > 0;
  int major = 0, minor = 0;
  const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
                  minor == 0;
  if (dev < kDevices) known[dev].store(ok ? 1 : -1);
  return ok;
}

const char* attention_mma_variant_name(int variant) {
  if (variant == 0) return "v1";
  if (variant == kWgVariant) return "wg";
  if (variant == kWg2Variant) return "wg2";
  if (variant == kWgsVariant) return "wgs";
  if (variant == kShortVariant) return "short4";
  if (variant > kFa2ConfigCount && variant < kShortVariant) return kLeanNames[variant - 1 - kFa2ConfigCount];
  return variant > 0 && variant <= kFa2ConfigCount ? kFa2Configs[variant - 1].name : "";
}

int attention_mma_pick(const AttentionArgs& a) {
  if (const char* env = std::getenv("KILNRT_ATTENTION_KERNEL"); env && *env) {
    for (int i = 0; i < attention_mma_variant_count(); ++i)
      if (std::strcmp(env, attention_mma_variant_name(i)) == 0) return i;
  }
  // Thresholds count blocks (or (b0, b1) entries) per SM of the current device; measured on an H100 (132 SMs), the
  // figures behind each rule are in bench/results/attention_dispatch_h100_2026-11-23.md.
  // - Short-kernel arguments (Sk <= 256 in its chunk counts, no mask or a key mask), on sm_90a: the streamed-Q wgmma
  //   variant ("wgs") when Sq > 128 and there are >= 2 entries per SM (K / V copied once per entry); else two 64-row
  //   tiles per block ("wg2") from 768 tiles on (about two waves of one-tile blocks at 3 per SM on 132 SMs), one
  //   tile per block ("wg") below.
  // - Short-kernel arguments without wgmma: the short kernel, except above 128 keys with more than one and at most
  //   three 64-row blocks per SM (about one wave at its 3 blocks per SM leaves each block's K / V copy exposed; the
  //   lean kernel's 4 blocks per SM overlap copies with math).
  // - Lean-kernel arguments (D 64; no mask, a key mask, or a mask row per query in 16-byte chunks): 4 warps per block,
  //   8 with a row mask at >= 2 blocks of 128 rows per SM (the mask tile's shared memory leaves 4-warp blocks 12 warps
  //   per SM, 8-warp blocks 16).
  // - Otherwise, by 64-row blocks per SM: >= 2: 64 rows per block, every warp walks all keys; >= 1: the same rows
  //   with the keys split over two warps; fewer: 16 rows per block with 4 warps splitting 256-key stages when
  //   Sk > 128, else 32 rows with 2 x 2 warps. D = 128 keeps 64 rows with 4 warps everywhere (its K / V rows of 272
  //   bytes in shared memory leave too few warps per SM with fewer warps per block).
  const int64_t sms = sm_count();
  const int64_t blocks64 = a.b0 * a.b1 * ((a.sq + 63) / 64);
  if (short_supports(a)) {
    if (attention_wgmma_runs_here()) {
      if (a.sq > 128 && a.b0 * a.b1 >= 2 * sms) return kWgsVariant;
      return blocks64 >= 768 ? kWg2Variant : kWgVariant;
    }
    if (!(a.sk > 128 && blocks64 > sms && blocks64 <= 3 * sms)) return kShortVariant;
  }
  if (lean_supports(a)) {
    const bool row_mask = a.mask && a.ms[2] != 0;
    return 1 + kFa2ConfigCount + (row_mask && a.b0 * a.b1 * ((a.sq + 127) / 128) >= 2 * sms ? 1 : 0);  // lean4 / 8
  }
  const char* name = a.d > 64 || blocks64 >= 2 * sms ? "m1r4s1"
                     : blocks64 >= sms               ? "m1r4s2c"
                     : a.sk > 128                    ? "m1r1s4c"
                                                     : "m1r2s2c";
  for (int i = 1; i < attention_mma_variant_count(); ++i)
    if (std::strcmp(name, attention_mma_variant_name(i)) == 0) return i;
  return 0;
}

int attention_mma_variant(const AttentionArgs& a, int variant, StreamT stream) {
  if (!attention_uses_mma(a) || variant < 0 || variant >= attention_mma_variant_count())
    return static_cast<int>(cudaErrorInvalidValue);
  if (variant == 0) return a.dt == 1 ? launch_t<__half>(a, stream) : launch_t<__nv_bfloat16>(a, stream);
  if (variant == kWgVariant || variant == kWg2Variant || variant == kWgsVariant) {
    // The wgmma kernel where it takes the arguments and runs on this device, else the short kernel's fallbacks.
    const int tiles = variant == kWg2Variant ? 2 : variant == kWgsVariant ? 0 : 1;
    if (short_supports(a) && attention_wgmma_runs_here())
      return a.dt == 1 ? wg_launch_f16(a, tiles, stream) : wg_launch_bf16(a, tiles, stream);
    variant = kShortVariant;
  }
  if (variant == kShortVariant) {
    // The short kernel where it takes the arguments, else the lean kernel's pick.
    if (short_supports(a)) return a.dt == 1 ? short_launch_f16(a, stream) : short_launch_bf16(a, stream);
    if (lean_supports(a)) variant = 1 + kFa2ConfigCount;
  }
  if (variant > kFa2ConfigCount) {
    // The lean kernel where it takes the arguments, else the second kernel's m1r4s1 (same 64-row blocks).
    if (lean_supports(a)) {
      const int warps = kLeanWarps[variant - 1 - kFa2ConfigCount];
      return a.dt == 1 ? lean_launch_f16(a, warps, stream) : lean_launch_bf16(a, warps, stream);
    }
    variant = 2;
    static_assert(kFa2Configs[1].mt == 1 && kFa2Configs[1].rw == 4 && kFa2Configs[1].ks == 1 && !kFa2Configs[1].cap,
                  "variant 2 is m1r4s1");
  }
  return a.dt == 1 ? fa2_launch_f16(a, variant - 1, stream) : fa2_launch_bf16(a, variant - 1, stream);
}

int attention_mma(const AttentionArgs& a, StreamT stream) {
  return attention_mma_variant(a, attention_mma_pick(a), stream);
}

}  // namespace kilnrt::cuda::kernels
