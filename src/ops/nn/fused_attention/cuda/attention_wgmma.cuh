// The fifth attention kernel ("wg"): the short kernel's scheme (attention_short.cuh: the whole key range in
// shared memory, all scores of a row in registers, one max / exp / P V pass) on Hopper's warpgroup MMA (wgmma,
// sm_90a). One warpgroup (4 warps, 128 threads) owns one or two tiles of 64 query rows of one (b0, b1) entry, one
// after the other on the same copy of K and V:
//   - Q, K and V rows (64 elements, 128 bytes) are copied with cp.async into shared memory in the 128-byte swizzle
//     wgmma reads (16-byte chunk c of row r at chunk c ^ (r % 8) of its 1024-byte group of 8 rows);
//   - S = Q K^T: per 16 columns of D, one wgmma m64n64k16 per 64 keys (and one m64n16k16 for a 16-key tail), Q and
//     K from shared memory (K-major); the accumulators are laid out per warp as mma.sync's, so the softmax code is
//     the short kernel's;
//   - O = P V: per 16 keys one wgmma m64n64k16 with P in registers (A) and V from shared memory, read transposed
//     (N-major B); the row sums are float32 sums of P.
// The tensor cores read operands straight from shared memory, so the ldmatrix and per-warp mma instructions of the
// mma.sync kernels go away: the warpgroup runs 4 * (kChunks / 4 + tail) + kChunks wgmma in all.
// Preconditions: those of the short kernel (short_supports), an sm_90a build (wg_built()) and a device of compute
// capability 9.0.
#pragma once
#include <type_traits>

#include "ops/nn/fused_attention/cuda/attention_short.cuh"
#include "cuda/kernels/wgmma_common.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

constexpr int kWgRows = 64, kWgThreads = 128, kWgRowBytes = 128;

// The shared Hopper helpers (wgmma_common.cuh) under the names this kernel uses.
__device__ __forceinline__ uint32_t wg_swz(int row, int chunk) { return wgmma::swz(row, chunk); }
__device__ __forceinline__ void wg_commit_wait() {
  wgmma::commit();
  wgmma::wait<0>();
}
using wgmma::desc;
using wgmma::fence;
using wgmma::proxy_fence;

// D[64 x 16] (+)= A[64 x 16] B[16 x 16], both from shared memory (K-major). d: 2 n8-tiles.
template <class T>
__device__ __forceinline__ void wg_ss_n16(float (*d)[4], uint64_t da, uint64_t db, int accumulate) {
#if KILNRT_WGMMA
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, "
        "1, 0, 0;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
          "+f"(d[1][3])
        : "l"(da), "l"(db), "r"(accumulate));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, "
        "1, 1, 0, 0;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
          "+f"(d[1][3])
        : "l"(da), "l"(db), "r"(accumulate));
  }
#endif
}

// D[64 x 64] += A[64 x 16] B[16 x 64], A in registers (the mma.sync A fragment of this warp's 16 rows), B from
// shared memory read transposed (N-major: rows of B are the 16 keys, 64 contiguous columns).
template <class T>
__device__ __forceinline__ void wg_rs_n64_tb(float (*d)[4], const uint32_t (&a)[4], uint64_t db) {
#if KILNRT_WGMMA
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " KILNRT_WGMMA_REGS32
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : KILNRT_WGMMA_D32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " KILNRT_WGMMA_REGS32
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : KILNRT_WGMMA_D32(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
  }
#endif
}

// S [64 x kKeys] = Q K^T for one 64-row tile, Q (qa) and K (ka) from shared memory (128-byte swizzle): per 16
// columns of D, one m64n64k16 per 64 keys and one m64n16k16 for a 16-key tail. Fenced, committed and waited for.
template <class T, int kKeys>
__device__ __forceinline__ void wg_scores(float (*s)[4], uint32_t qa, uint32_t ka) {
  constexpr int kFull64 = kKeys / 64, kTail16 = (kKeys % 64) / 16;
  static_assert(kTail16 <= 1, "key ranges of 64 n + 16 at most");
  fence();
#pragma unroll
  for (int kk = 0; kk < kLeanD / 16; ++kk) {
    const uint64_t dq = desc(qa + kk * 32);
#pragma unroll
    for (int j = 0; j < kFull64; ++j)
      wgmma::mma_ss_n64<T, 0>(&s[8 * j], dq, desc(ka + j * 64 * kWgRowBytes + kk * 32), kk);
    if constexpr (kTail16) wg_ss_n16<T>(&s[8 * kFull64], dq, desc(ka + kFull64 * 64 * kWgRowBytes + kk * 32), kk);
  }
  wg_commit_wait();
}

// O [64 x 64] = P V: P in registers (this warp's mma.sync A fragments, kChunks chunks of 16 keys), V from shared
// memory (va) read transposed. Zeroes o first; fenced, committed and waited for.
template <class T, int kChunks>
__device__ __forceinline__ void wg_pv(float (&o)[kLeanD / 8][4], const uint32_t (&pa)[kChunks][4], uint32_t va) {
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  fence();
#pragma unroll
  for (int c = 0; c < kChunks; ++c) wg_rs_n64_tb<T>(o, pa[c], desc(va + c * 16 * kWgRowBytes));
  wg_commit_wait();
}

// The end of a 64-row tile, shared by the wgmma kernels: the row sums over the quad and 1 / l (0 for a row whose
// keys were all -inf) ...
__device__ __forceinline__ void wg_row_inverse(float (&l)[2], const float (&mx)[2], float (&inv)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(kFull, l[h], 1);
    l[h] += __shfl_xor_sync(kFull, l[h], 2);
    inv[h] = mx[h] == -INFINITY ? 0.f : 1.f / l[h];
  }
}

// ... O normalised into this warp's rows (wr + g, + 8) of the tile's Q buffer qt (swizzled, as the chunks are read
// back) ...
template <class T>
__device__ __forceinline__ void wg_stage_o(unsigned char* qt, const float (&o)[kLeanD / 8][4], const float (&inv)[2],
                                           int wr, int g, int t) {
#pragma unroll
  for (int n = 0; n < kLeanD / 8; ++n)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<uint32_t*>(qt + wg_swz(wr + g + 8 * h, n) + 4 * t) =
          Bits16<T>::pack(o[n][2 * h] * inv[h], o[n][2 * h + 1] * inv[h]);
}

// ... and the warp's 16 staged rows written with 16-byte stores (rows q0 + wr + r < sq of `out`, row stride os2).
template <class T>
__device__ __forceinline__ void wg_store_rows(const unsigned char* qt, T* out, int64_t os2, int q0, int wr, int lane,
                                              int sq) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = lane + 32 * i, r = wr + (idx >> 3), chunk = idx & 7;
    const int row = q0 + r;
    if (row < sq)
      *reinterpret_cast<uint4*>(out + int64_t(row) * os2 + chunk * 8) =
          *reinterpret_cast<const uint4*>(qt + wg_swz(r, chunk));
  }
}

template <int kChunks, int kMTiles>
struct WgShape {
  static constexpr int kKeys = 16 * kChunks;
  static constexpr size_t kQBytes = size_t(kWgRows) * kWgRowBytes, kKvBytes = size_t(kKeys) * kWgRowBytes;
  // Q (one tile per 64 rows), K, V (1024-byte aligned tiles), the bias row, slack to align the first tile.
  static constexpr size_t kBytes = kMTiles * kQBytes + 2 * kKvBytes + kKeys * sizeof(float) + 1024;
};

// Waits until every cp.async copy group but the last kPending has landed, then makes the copies visible to the whole
// block's wgmma (async proxy) reads.
template <int kPending>
__device__ __forceinline__ void wg_wait_copies() {
  cp_async_wait<kPending>();
  proxy_fence();
  __syncthreads();
}

// Copies K (ending the copy group the caller's Q rows joined) and then V (a group of its own) of entry (b0, b1) into
// shared memory in the 128-byte swizzle, rows >= sk zero-filled.
template <class T, int kKeys>
__device__ __forceinline__ void wg_copy_kv(unsigned char* ksm, unsigned char* vsm, const AttentionArgs& a, int64_t b0,
                                           int64_t b1, int sk) {
  short_copy_rows<T, kWgThreads, kKeys>(ksm, static_cast<const T*>(a.k) + b0 * a.ks[0] + b1 * a.ks[1], a.ks[2], sk,
                                        wg_swz);
  cp_async_commit();
  short_copy_rows<T, kWgThreads, kKeys>(vsm, static_cast<const T*>(a.v) + b0 * a.vs[0] + b1 * a.vs[1], a.vs[2], sk,
                                        wg_swz);
  cp_async_commit();
}

// One 64-row tile of the wgmma kernels, rows q0.. of the (b0, b1) entry whose output rows start at `out`: S = Q K^T
// from the tile's Q buffer qt, the softmax, O = P V, O normalised and staged in qt, then stored. before_pv() runs
// between the softmax and P V (the first tile waits for V's copy there). Warps whose rows are all past Sq compute
// too (the wgmma take the whole warpgroup; skipping their softmax cost registers: wgmma serialised at 13 chunks).
template <class T, int kChunks, bool kKeyMask, class BeforePv>
__device__ __forceinline__ void wg_tile(unsigned char* qt, uint32_t ka, const unsigned char* vsm, const float* bias,
                                        float sl2, float mul, int q0, int sq, int sk, int zero_masked_rows, T* out,
                                        int64_t os2, BeforePv before_pv) {
  constexpr int kN = 2 * kChunks, kKeys = 16 * kChunks;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int wr = warp * 16;
  const bool active = q0 + wr < sq;  // warp-uniform
  // S = Q K^T.
  float s[kN][4];
  wg_scores<T, kKeys>(s, smem_addr(qt), ka);

  // The bias, row max, P and float32 row sums: the short kernel's softmax on this warp's rows (16 * warp + g, + 8).
  float mx[2], l[2] = {0.f, 0.f};
  uint32_t pa[kChunks][4];
  short_softmax<T, kChunks, kKeyMask, true>(s, bias, sl2, mul, mx, pa, l);
  before_pv();

  // O = P V.
  float o[kLeanD / 8][4];
  wg_pv<T, kChunks>(o, pa, smem_addr(vsm));

  float inv[2];
  wg_row_inverse(l, mx, inv);
  if (active)
    short_masked_rows<T>(o, inv, mx, sk, zero_masked_rows,
                         [&](int key, int n) { return vsm + wg_swz(key, n) + 4 * t; });
  // Normalise into this warp's rows of the Q tile, then 16-byte row stores.
  wg_stage_o<T>(qt, o, inv, wr, g, t);
  __syncwarp();
  if (active) wg_store_rows<T>(qt, out, os2, q0, wr, lane, sq);
}

// Registers: up to 128 with 8 chunks (4 blocks per SM: BERT b32 10.2 against 10.7 us with 3, measured with
// bench/attention_wgmma_probe.cu and this bound changed), else 168 (3 blocks). kMTiles 64-row tiles per block
// share one copy of K / V: 2 pays at large grids (CudaAttentionMmaBench, H100: ViT b32 19.6 against 20.7 us, BERT
// b32 9.0 against 9.1) and loses at small ones (ViT b1 5.7 against 3.7, b8 7.6 against 6.0).
template <class T, int kChunks, bool kKeyMask, int kMTiles>
__global__ void __launch_bounds__(kWgThreads, kChunks <= 8 ? 4 : 3) attention_wg(AttentionArgs a) {
  using Sh = WgShape<kChunks, kMTiles>;
  constexpr int kKeys = Sh::kKeys;
  extern __shared__ __align__(128) unsigned char wg_smem[];
  // The swizzle pattern is taken from address bits 7-9: tiles start on 1024-byte boundaries (kBytes has the slack).
  unsigned char* qsm = wg_smem + ((1024u - (smem_addr(wg_smem) & 1023u)) & 1023u);
  unsigned char* ksm = qsm + kMTiles * Sh::kQBytes;
  unsigned char* vsm = ksm + Sh::kKvBytes;
  float* bias = reinterpret_cast<float*>(vsm + Sh::kKvBytes);
  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int qbase = blockIdx.x * kWgRows * kMTiles;
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;

#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
    const int q0 = qbase + mt * kWgRows;
    short_copy_rows<T, kWgThreads, kWgRows>(
        qsm + mt * Sh::kQBytes, static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1] + int64_t(q0) * a.qs[2],
        a.qs[2], sq - q0, wg_swz);
  }
  wg_copy_kv<T, kKeys>(ksm, vsm, a, b0, b1, sk);
  lean_fill_bias<T, kKeyMask, kWgThreads>(bias, kKeys, sk, a, b0, b1);
  const float sl2 = a.scale * kLog2e;
  const float mul = kKeyMask ? 1.f : sl2;  // as in the short kernel
  wg_wait_copies<1>();                     // Q and K

  const uint32_t ka = smem_addr(ksm);
  T* out = static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1];
#pragma unroll 1
  for (int mt = 0; mt < kMTiles; ++mt) {
    const int q0 = qbase + mt * kWgRows;
    if (q0 >= sq) break;  // block-uniform
    wg_tile<T, kChunks, kKeyMask>(qsm + mt * Sh::kQBytes, ka, vsm, bias, sl2, mul, q0, sq, sk, a.zero_masked_rows, out,
                                  a.os[2], [&] {
                                    if (mt == 0) wg_wait_copies<0>();  // V
                                  });
  }
}

// The streamed-Q variant ("wgs"): one block walks up to kWgsTiles 64-row tiles of one (b0, b1) entry
// (all of Sq <= 256: ViT's 197 rows in one block instead of two, so K and V are copied once per entry), with Q in
// two buffers: tile mt + 2's Q is copied while tile mt + 1 computes. Copy groups: Q0 + K, V, Q1, then one per tile.
constexpr int kWgsTiles = 4;

template <int kChunks>
using WgsShape = WgShape<kChunks, 2>;  // the same layout with two Q buffers

template <class T, int kChunks, bool kKeyMask>
__global__ void __launch_bounds__(kWgThreads, kChunks <= 8 ? 4 : 3) attention_wgs(AttentionArgs a) {
  using Sh = WgsShape<kChunks>;
  constexpr int kKeys = Sh::kKeys;
  extern __shared__ __align__(128) unsigned char wg_smem[];
  unsigned char* qsm = wg_smem + ((1024u - (smem_addr(wg_smem) & 1023u)) & 1023u);
  unsigned char* ksm = qsm + 2 * Sh::kQBytes;
  unsigned char* vsm = ksm + Sh::kKvBytes;
  float* bias = reinterpret_cast<float*>(vsm + Sh::kKvBytes);
  const int sq = static_cast<int>(a.sq), sk = static_cast<int>(a.sk);
  const int qbase = blockIdx.x * kWgRows * kWgsTiles;
  const int tiles = min(kWgsTiles, (sq - qbase + kWgRows - 1) / kWgRows);
  const int64_t b1 = blockIdx.y, b0 = blockIdx.z;
  const T* qg = static_cast<const T*>(a.q) + b0 * a.qs[0] + b1 * a.qs[1];
  auto copy_q = [&](int mt) {
    const int q0 = qbase + mt * kWgRows;
    short_copy_rows<T, kWgThreads, kWgRows>(qsm + (mt & 1) * Sh::kQBytes, qg + int64_t(q0) * a.qs[2], a.qs[2], sq - q0,
                                            wg_swz);
  };

  copy_q(0);
  wg_copy_kv<T, kKeys>(ksm, vsm, a, b0, b1, sk);
  if (tiles > 1) copy_q(1);
  cp_async_commit();  // possibly empty: every tile below counts the same groups
  lean_fill_bias<T, kKeyMask, kWgThreads>(bias, kKeys, sk, a, b0, b1);
  const float sl2 = a.scale * kLog2e;
  const float mul = kKeyMask ? 1.f : sl2;
  wg_wait_copies<2>();  // Q0 and K

  const uint32_t ka = smem_addr(ksm);
  T* out = static_cast<T*>(a.o) + b0 * a.os[0] + b1 * a.os[1];
#pragma unroll 1
  for (int mt = 0; mt < tiles; ++mt) {
    wg_tile<T, kChunks, kKeyMask>(qsm + (mt & 1) * Sh::kQBytes, ka, vsm, bias, sl2, mul, qbase + mt * kWgRows, sq, sk,
                                  a.zero_masked_rows, out, a.os[2], [&] {
                                    if (mt == 0) wg_wait_copies<1>();  // V (Q1 may still be in flight)
                                  });
    if (mt + 1 < tiles) {
      __syncthreads();  // every warp has stored its rows out of this tile's buffer
      if (mt + 2 < tiles) copy_q(mt + 2);
      cp_async_commit();
      wg_wait_copies<1>();  // tile mt + 1's Q
    }
  }
}

// kMTiles 64-row tiles per block (attention_wg), or 0: the streamed-Q variant (attention_wgs).
template <class T, int kChunks, bool kKeyMask, int kMTiles>
int launch_wg_mask(const AttentionArgs& a, StreamT stream) {
  if constexpr (kMTiles == 0)
    return launch_attention_rows(attention_wgs<T, kChunks, kKeyMask>, WgsShape<kChunks>::kBytes, kWgRows * kWgsTiles,
                                 kWgThreads, a, stream);
  else
    return launch_attention_rows(attention_wg<T, kChunks, kKeyMask, kMTiles>, WgShape<kChunks, kMTiles>::kBytes,
                                 kWgRows * kMTiles, kWgThreads, a, stream);
}

template <class T, int kChunks, int kMTiles>
int launch_wg_chunks(const AttentionArgs& a, StreamT stream) {
  return a.mask ? launch_wg_mask<T, kChunks, true, kMTiles>(a, stream)
                : launch_wg_mask<T, kChunks, false, kMTiles>(a, stream);
}

template <class T, int kMTiles>
int launch_wg(const AttentionArgs& a, StreamT stream) {
  switch (short_chunks(a.sk)) {
    case kShortChunkCounts[0]: return launch_wg_chunks<T, kShortChunkCounts[0], kMTiles>(a, stream);
    case kShortChunkCounts[1]: return launch_wg_chunks<T, kShortChunkCounts[1], kMTiles>(a, stream);
    case kShortChunkCounts[2]: return launch_wg_chunks<T, kShortChunkCounts[2], kMTiles>(a, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

// Whether this build holds the sm_90a kernels (attention_wgmma_sm90a.cu), and their launchers (short_supports must
// hold; the device must be of compute capability 9.0: sm_90a code runs nowhere else).
bool wg_built();
// m_tiles: 64-row tiles per block, 1 or 2; 0: the streamed-Q variant (attention_wgs).
int wg_launch_f16(const AttentionArgs& a, int m_tiles, StreamT stream);
int wg_launch_bf16(const AttentionArgs& a, int m_tiles, StreamT stream);

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
