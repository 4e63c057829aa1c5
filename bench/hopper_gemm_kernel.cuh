// A Hopper GEMM for 16-bit storage, for bench/hopper_gemm_probe.cu only: Y [M, N] = A [M, K] x W + bias [+ R]
// [-> GELU], float32 accumulation, sm_90a; W is [N, K] (K-major) or [K, N] (MN-major). Measured on an H100
// (2026-11-23) and NOT used by the engine: it computes the same results as cuBLASLt at every zoo transformer shape,
// but takes 1.02x (BERT b32 fc2) to 1.4x (ViT b32 out-projection) cuBLASLt's best heuristic candidate
// (bench/results/hopper_gemm_probe_h100_2026-11-23.md). Kept as the starting point of a GEMM the engine can own
// (with LayerNorm or other row-wise work in its epilogue).
//
// Why it was built: cuBLASLt's Hopper kernels cover N = 768 with 128 x 256 / 256 x 128 tiles (96 tiles on 132 SMs,
// 0.73 of a wave); a 128 x 192 tile covers it with 128.
//
// Structure: a persistent kernel (one block per SM of 1 + kWG warpgroups, tiles of 64 kWG x kBN walked in row-band
// order; kWG = 2, or 3 for 192 x 192 tiles).
//   - warpgroup 0: thread 0 is the K-step producer: TMA loads (128-byte swizzle, the layout wgmma reads) of 64 K values
//     of the A and W tiles into a ring of kStages slots, each guarded by a "full" and an "empty" mbarrier; the ring
//     continues across tiles, so the next tile's first steps load during the epilogue. With a cluster of kCluster
//     blocks along N, each block loads 128 / kCluster rows of the A tile and multicasts them. Thread 32 is the aux
//     producer: each tile's residual (into the epilogue buffer) and bias, once the previous tile's stores have read
//     the buffer.
//   - warpgroups 1 and 2: the consumers, 64 rows each. Per K step: wait "full", four m64 x kBN x k16 wgmma, commit,
//     wait for the previous step's group, release that step's slot (lane c of warp 0 signals block c of the cluster).
//   - epilogue: + bias, + residual, GELU (tanh form, as cuBLASLt's), rounded to 16 bits in place in the swizzled
//     epilogue buffer, then TMA stores of 64 x 64 boxes.
//   - launched with programmatic stream serialization: the prologue overlaps the previous kernel.
// Where the time goes (fits over the BERT b32 shapes, 128 x 192 tiles): a K step takes 0.52 us (85 % of the tensor
// rate at the sustained clock), the epilogue ~1.6 us per tile (the consumers' tensor cores idle meanwhile: a
// ping-pong schedule, one warpgroup's epilogue under the other's MMAs, would hide it), the launch, pipeline fill and
// drain ~4.7 us per launch. Clusters with A multicast run as fast as without (L2 bandwidth is not the limit at
// 128 x 192); they were 1.4-7x slower while the cross-block slot releases were mbarrier arrivals with .release.cluster
// semantics, which stall the releasing warp every K step: the default (.release.cta, as CUTLASS's) is what the reads
// need, since wgmma::wait already completed them. A ping-pong schedule: hopper_gemm_pingpong.cuh.
// Rows past M and columns past N are zero-filled by TMA on load and clipped on store. Host requirements: K and N
// multiples of 8 (16-byte row strides), 16-byte aligned pointers. Every wgmma of a K step sits between fence() and
// commit() with no branch (wgmma_common.cuh: ptxas info C7519); the kernel compiles without it.
#pragma once
#include <cuda.h>  // CUtensorMap (the type only: the maps are encoded on the host)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/wgmma_common.cuh"
#include "wgmma_wide.cuh"

namespace kilnrt::bench_hopper_gemm {

namespace wgmma = kilnrt::cuda::kernels::wgmma;
namespace attention_mma_detail = kilnrt::cuda::kernels::attention_mma_detail;

struct Params {
  CUtensorMap a;     // A [M, K]: box {64, 128 / kCluster}
  CUtensorMap w;     // W [N, K]: box {64, kBN}; W [K, N]: box {64, 64}
  CUtensorMap r;     // residual [M, N]: box {64, 64} (unused without one)
  CUtensorMap y;     // Y [M, N]: box {64, 64}
  const void* bias;  // [N] or null
  int m, n, k;
  int has_res, gelu;
};

// kWG consumer warpgroups of 64 rows each (2 or 3): tiles of 64 kWG x kBN; as many ring stages as fit (at most 6).
template <int kBN, int kWG = 2>
struct Cfg {
  static constexpr int kBM = 64 * kWG, kBK = 64, kThreads = 128 * (kWG + 1);
  static constexpr int kABytes = kBM * 128, kBBytes = kBN * 128, kStage = kABytes + kBBytes;
  static constexpr int kEpiBytes = kBM * kBN * 2;  // (kWG x kBN / 64) boxes of 64 rows x 128 bytes
  static constexpr int kBiasBytes = kBN * 2;
  static constexpr int kFixed = kEpiBytes + kBiasBytes + 8 * 14 + 1024;  // + barriers (at most 6 stages) + slack
  static constexpr int kFit = (232448 - kFixed) / kStage;
  static constexpr int kStages = kFit > 6 ? 6 : kFit;
  static constexpr int kBarBytes = 8 * (2 * kStages + 2);
  static constexpr size_t kSmem = size_t(kStages) * kStage + kEpiBytes + kBiasBytes + kBarBytes + 1024;  // + slack
  // Registers after setmaxnreg: the producer warpgroup gives up what the consumers take (multiples of 8).
  static constexpr int kConsumerRegs = kWG == 2 ? 232 : 152;
  static_assert(kStages >= 3, "too few ring stages fit");
};

namespace ptx {

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Arrive on the mbarrier at the same shared-memory offset in block `cta` of the cluster (this block included).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                                   uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, "
      "%4}], [%2], %5;\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
// A contiguous copy of `bytes` (a multiple of 16, 16-byte aligned ends) into shared memory, signalling `bar`.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit_and_drain() {
  asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void prefetch_map(const CUtensorMap* m) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(m) : "memory");
}
// Programmatic dependent launch: wait for the grids this one depends on (no-op without the launch attribute), and let
// the next grid launch (its blocks start once every block of this grid has issued it or exited).
__device__ __forceinline__ void wait_prior_grids() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void allow_next_grid() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t lds32(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ void sts32(uint32_t a, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}

}  // namespace ptx

// cuBLASLt's GELU: 0.5 x (1 + tanh u), u = sqrt(2 / pi) (x + 0.044715 x^3), with the one-instruction tanh (the
// epilogue is bound by the special-function unit otherwise).
__device__ __forceinline__ float gelu_tanh(float x) {
  const float u = 0.7978845608f * fmaf(0.044715f * x, x * x, x);
  float th;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(th) : "f"(u));
  const float hx = 0.5f * x;
  return fmaf(hx, th, hx);
}

// The tiles of a persistent block: round i of cluster `cid` (of `nclusters`) is tile group cid + i * nclusters; a
// group is kc adjacent column tiles of one row band (blocks running at the same time share A rows in L2), and the
// block takes column tile `rank` of it.
struct TileWalk {
  int cid, nclusters, col_groups, row_tiles, kc, rank;
  // The origin of round i's tile, false past the last one.
  __device__ __forceinline__ bool at(int i, int bm, int bn, int& m0, int& n0) const {
    const int t = cid + i * nclusters, m_tile = t / col_groups;
    m0 = m_tile * bm;
    n0 = ((t % col_groups) * kc + rank) * bn;
    return m_tile < row_tiles;
  }
};

// The epilogue of one accumulator pair at `addr` in a swizzled epilogue buffer (where the aux producer put the
// residual): + bias pair, + residual, GELU, rounded to T in place.
template <class T>
__device__ __forceinline__ void finish_pair(const Params& p, uint32_t addr, float v0, float v1, float2 bias) {
  using B16 = attention_mma_detail::Bits16<T>;
  v0 += bias.x;
  v1 += bias.y;
  if (p.has_res) {
    const uint32_t rb = ptx::lds32(addr);
    const float2 rv = B16::unpack(*reinterpret_cast<const typename B16::Pair*>(&rb));
    v0 += rv.x;
    v1 += rv.y;
  }
  if (p.gelu) {
    v0 = gelu_tanh(v0);
    v1 = gelu_tanh(v1);
  }
  ptx::sts32(addr, B16::pack(v0, v1));
}
// The bias pair of tile column `col` (tile origin n0) from the staged bias; zeros past N or without a bias.
template <class T>
__device__ __forceinline__ float2 bias_pair(const Params& p, uint32_t bias_sm, int n0, int col) {
  using B16 = attention_mma_detail::Bits16<T>;
  if (!p.bias || n0 + col >= p.n) return make_float2(0.f, 0.f);
  const uint32_t bb = ptx::lds32(bias_sm + col * 2);
  return B16::unpack(*reinterpret_cast<const typename B16::Pair*>(&bb));
}

// The K-step producer (one thread): TMA loads of every tile's K steps into a ring of kS slots of kBM + kBN rows of
// 128 bytes (A, then W), continued across the block's tiles. "full" / "empty" barriers are 8 bytes apart from
// full0 / empty0. With kG > 1 the block loads kBM / kG rows of the A tile (its `rank`) and multicasts them to the
// cluster's kG blocks.
template <int kBM, int kBN, bool kWNK, int kG, int kS>
__device__ __forceinline__ void produce_k_steps(const Params& p, const TileWalk& walk, int steps, uint32_t base,
                                                uint32_t full0, uint32_t empty0, uint32_t rank) {
  constexpr int kABytes = kBM * 128, kStage = kABytes + kBN * 128, kRows = kBM / kG;
  ptx::wait_prior_grids();
  int it = 0, m0, n0;
#pragma unroll 1
  for (int i = 0; walk.at(i, kBM, kBN, m0, n0); ++i) {
#pragma unroll 1
    for (int kt = 0; kt < steps; ++kt, ++it) {
      const int s = it % kS;
      const uint32_t full = full0 + 8u * s;
      ptx::mbar_wait(empty0 + 8u * s, ((it / kS) & 1) ^ 1);
      ptx::mbar_expect_tx(full, kStage);
      const uint32_t sa = base + s * kStage, sb = sa + kABytes;
      if constexpr (kG > 1)
        ptx::tma_load_multicast(sa + rank * kRows * 128, &p.a, full, kt * 64, m0 + int(rank) * kRows,
                                uint16_t((1u << kG) - 1));
      else
        ptx::tma_load(sa, &p.a, full, kt * 64, m0);
      if constexpr (kWNK) {
        ptx::tma_load(sb, &p.w, full, kt * 64, n0);
      } else {
#pragma unroll
        for (int b = 0; b < kBN / 64; ++b) ptx::tma_load(sb + b * 8192, &p.w, full, n0 + b * 64, kt * 64);
      }
    }
  }
}

template <class T, int kBN, bool kWNK, int kCluster, bool kMc, int kWG>
__global__ void __launch_bounds__(128 * (kWG + 1), 1) hopper_gemm_kernel(const __grid_constant__ Params p) {
#if KILNRT_WGMMA
  constexpr int kG =
      kMc ? kCluster : 1;  // the blocks sharing (multicasting) the A tile; 1: the cluster is only placement
  using C = Cfg<kBN, kWG>;
  constexpr int kS = C::kStages, kBoxes = kBN / 64;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = attention_mma_detail::smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t epi = base + kS * C::kStage;
  const uint32_t bias_sm = epi + C::kEpiBytes;  // the tile's bias columns
  const uint32_t bars = bias_sm + C::kBiasBytes;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (kS + s); };
  const uint32_t aux_full = bars + 8u * 2 * kS;  // the tile's residual and bias have landed
  const uint32_t epi_free = aux_full + 8u;       // both consumer warpgroups are done with them (stores read)
  const bool aux = p.has_res || p.bias;          // the epilogue reads shared memory the aux producer fills

  const int tid = threadIdx.x, wg = tid >> 7;
  const int steps = (p.k + C::kBK - 1) / C::kBK;
  const int row_tiles = (p.m + C::kBM - 1) / C::kBM, col_groups = (p.n + kBN - 1) / kBN / kCluster;
  const uint32_t rank = kCluster > 1 ? ptx::cluster_rank() : 0;
  const TileWalk walk{
      int(blockIdx.x) / kCluster, int(gridDim.x) / kCluster, col_groups, row_tiles, kCluster, int(rank)};
  if (tid == 0) {
    ptx::prefetch_map(&p.a);
    ptx::prefetch_map(&p.w);
    for (int s = 0; s < kS; ++s) {
      ptx::mbar_init(full(s), 1);
      ptx::mbar_init(empty(s), kWG * kG);  // every consumer warpgroup of every block of the cluster
    }
    ptx::mbar_init(aux_full, 1);
    ptx::mbar_init(epi_free, kWG);  // every consumer warpgroup's stores have read its part
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (kCluster > 1)
    ptx::cluster_sync();
  else
    __syncthreads();
  // Launched with programmatic stream serialization: everything above overlapped the previous kernel's tail. Only
  // the two producer threads read global memory (the consumers' stores follow their loads), so only they wait. Every
  // SM's registers and shared memory are this grid's, so the next grid's blocks cannot start early anyway.
  ptx::allow_next_grid();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      produce_k_steps<C::kBM, kBN, kWNK, kG, kS>(p, walk, steps, base, full(0), empty(0), rank);
    } else if (tid == 32 && aux) {
      // The aux producer: each tile's residual (into the epilogue buffer) and bias, once the last tile's are used.
      if (p.has_res) ptx::prefetch_map(&p.r);
      ptx::wait_prior_grids();
      int m0, n0;
#pragma unroll 1
      for (int i = 0; walk.at(i, C::kBM, kBN, m0, n0); ++i) {
        const uint32_t bias_bytes = p.bias ? uint32_t(min(kBN, p.n - n0)) * 2u : 0u;
        ptx::mbar_wait(epi_free, (i & 1) ^ 1);
        ptx::mbar_expect_tx(aux_full, (p.has_res ? C::kEpiBytes : 0) + bias_bytes);
        if (p.has_res)
          for (int h = 0; h < kWG; ++h)
            for (int b = 0; b < kBoxes; ++b)
              ptx::tma_load(epi + (h * kBoxes + b) * 8192, &p.r, aux_full, n0 + b * 64, m0 + h * 64);
        if (bias_bytes) ptx::bulk_load(bias_sm, static_cast<const T*>(p.bias) + n0, bias_bytes, aux_full);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::kConsumerRegs));
    const int cw = wg - 1;  // rows cw * 64 .. + 63 of each tile
    const int t128 = tid & 127, warp = t128 >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    // Warp 0 of each consumer warpgroup releases slots: lane c signals block c of the cluster (in parallel).
    const bool releaser = warp == 0 && lane < kG;
    int it = 0, m0, n0;
    // Release a consumed slot: lane c of warp 0 arrives on block c's "empty" barrier.
    auto release = [&](int s) {
      if (!releaser) return;
      if constexpr (kG > 1)
        ptx::mbar_arrive_cluster(empty(s), uint32_t(lane));
      else
        ptx::mbar_arrive(empty(s));
    };
#pragma unroll 1
    for (int i = 0; walk.at(i, C::kBM, kBN, m0, n0); ++i) {
      float acc[kBN / 8][4];
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll 1
      for (int kt = 0; kt < steps; ++kt, ++it) {
        const int s = it % kS;
        ptx::mbar_wait(full(s), (it / kS) & 1);
        const uint32_t sa = base + s * C::kStage + cw * 64 * 128, sb = base + s * C::kStage + C::kABytes;
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const uint64_t da = wgmma::desc(sa + kk * 32);
          // W [N, K]: K-major, kBN rows of 128 bytes; W [K, N]: MN-major, 16 K rows per k16, 64-column atoms 8 KB
          // apart.
          const uint64_t db =
              kWNK ? wgmma::desc(sb + kk * 32) : kilnrt::bench_wgmma::desc_lbo(sb + kk * 16 * 128, 8192);
          kilnrt::bench_wgmma::mma_ss_wide<T, kWNK ? 0 : 1, kBN>(acc, da, db, 1);
        }
        wgmma::commit();
        wgmma::wait<1>();  // the previous step's MMAs are done: release its slot
        if (kt > 0) release((it - 1) % kS);
      }
      wgmma::wait<0>();
      release((it - 1) % kS);  // the tile's last slot

      // Epilogue: this warpgroup's 64 rows, in place in the epilogue buffer (boxes of 64 rows x 64 columns,
      // 128-byte swizzle: the 8 rows a store instruction touches land in distinct banks).
      if (aux)
        ptx::mbar_wait(aux_full, i & 1);
      else
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");  // the last tile's stores have read it
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const float2 bv = bias_pair<T>(p, bias_sm, n0, j * 8 + 2 * t);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp * 16 + g + 8 * h;
          const uint32_t addr = epi + (cw * kBoxes + j / 8) * 8192 + r * 128 + (((j % 8) ^ (r & 7)) << 4) + 4 * t;
          finish_pair<T>(p, addr, acc[j][2 * h], acc[j][2 * h + 1], bv);
        }
      }
      wgmma::proxy_fence();  // the stores above, visible to the TMA store
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + cw) : "memory");
      if (t128 == 0) {
        for (int b = 0; b < kBoxes; ++b)
          ptx::tma_store(&p.y, epi + (cw * kBoxes + b) * 8192, n0 + b * 64, m0 + cw * 64);
        ptx::tma_store_commit_and_drain();
        if (aux) ptx::mbar_arrive(epi_free);
      }
    }
  }
  if constexpr (kCluster > 1) ptx::cluster_sync();  // no block exits while a peer may still signal its barriers
#endif
}

// ---- host side ------------------------------------------------------------------------------------------------------

// One GEMM for the launcher. dt: 1 float16, 2 bfloat16.
struct Problem {
  int dt = 1;
  bool w_nk = false;  // W is [N, K] (else [K, N])
  const void* a = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;      // [N] or null
  const void* residual = nullptr;  // [M, N] or null; may be y itself
  void* y = nullptr;
  int m = 0, n = 0, k = 0;
  bool gelu = false;
  int bn = 192;     // tile columns: 128, 192 or 256
  int bm = 128;     // tile rows: 128 (two consumer warpgroups) or 192 (three; 192 columns only)
  int cluster = 1;  // blocks along N sharing the A tile: 1, 2 or 4 (dividing the column tiles)
  bool pdl = true;
  bool multicast = true;  // clusters multicast the A tile (false: a cluster only places its blocks together)  // launch
                          // with programmatic stream serialization (the prologue overlaps the previous kernel)
};

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// A 2-D map over rows of `inner` 16-bit values (row pitch `pitch` values), boxes of box_inner x box_outer, 128-byte
// swizzle.
inline bool encode_map(EncodeTiledFn enc, CUtensorMap* m, int dt, const void* ptr, uint64_t inner, uint64_t outer,
                       uint64_t pitch, uint32_t box_inner, uint32_t box_outer) {
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {pitch * 2};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t elem[2] = {1, 1};
  return enc(m, dt == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(ptr),
             dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Why `g` cannot run on this kernel ("" when it can).
inline const char* unsupported(const Problem& g) {
  if (g.dt != 1 && g.dt != 2) return "storage is not float16 / bfloat16";
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return "empty problem";
  if (g.n % 8 != 0 || g.k % 8 != 0) return "N and K must be multiples of 8";
  if (g.bn != 128 && g.bn != 192 && g.bn != 256) return "tile columns must be 128, 192 or 256";
  if (g.bm != 128 && !(g.bm == 192 && g.bn == 192 && g.cluster <= 2))
    return "192-row tiles: 192 columns, cluster 1 or 2";
  if (g.cluster > 1 && !g.multicast && (g.cluster == 4 || g.bm == 192))
    return "clusters of 4 and 192-row clusters are built with the A multicast only";
  if (g.cluster != 1 && g.cluster != 2 && g.cluster != 4) return "cluster must be 1, 2 or 4";
  if (((g.n + g.bn - 1) / g.bn) % g.cluster != 0) return "the cluster must divide the column tiles";
  if ((g.m + 127) / 128 > 65535) return "too many row tiles";
  for (const void* p : {g.a, g.w, g.bias, g.residual, static_cast<const void*>(g.y)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return "pointers must be 16-byte aligned";
  return "";
}

// The blocks the last launch could keep resident (the probe prints it: clusters may fit fewer than one per SM).
inline int& last_grid_blocks() {
  static int n = 0;
  return n;
}

// The kernel parameters of `g`: tensor maps with A boxes of 64 x a_rows and, for W [N, K], 64 x w_rows (W [K, N]:
// 64 x 64). False when the driver refuses a map.
inline bool make_params(const Problem& g, EncodeTiledFn enc, uint32_t a_rows, uint32_t w_rows, Params* p) {
  *p = Params{};
  if (!encode_map(enc, &p->a, g.dt, g.a, g.k, g.m, g.k, 64, a_rows)) return false;
  if (g.w_nk ? !encode_map(enc, &p->w, g.dt, g.w, g.k, g.n, g.k, 64, w_rows)
             : !encode_map(enc, &p->w, g.dt, g.w, g.n, g.k, g.n, 64, 64))
    return false;
  if (!encode_map(enc, &p->y, g.dt, g.y, g.n, g.m, g.n, 64, 64)) return false;
  if (g.residual && !encode_map(enc, &p->r, g.dt, g.residual, g.n, g.m, g.n, 64, 64)) return false;
  p->bias = g.bias;
  p->m = g.m;
  p->n = g.n;
  p->k = g.k;
  p->has_res = g.residual != nullptr;
  p->gelu = g.gelu;
  return true;
}

// Launches a persistent kernel of `threads` threads: at most `work` clusters of `cluster` blocks, no more than fit on
// the GPU at once (one block per SM; for clusters, cudaOccupancyMaxActiveClusters). 0 or a cudaError_t; -1 when no
// cluster fits.
template <class Kernel>
int launch_persistent(Kernel kernel, int threads, size_t smem, int cluster, long long work, bool pdl, cudaStream_t s,
                      const Params& p) {
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (e != cudaSuccess) return int(e);
  int dev = 0, sms = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return int(e);
  if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return int(e);
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(unsigned(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = unsigned(cluster);
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cluster > 1 ? 2 : 1;
  int clusters = sms / cluster;
  if (cluster > 1) {
    cfg.gridDim = dim3(unsigned(cluster * clusters), 1, 1);
    int active = 0;
    if ((e = cudaOccupancyMaxActiveClusters(&active, kernel, &cfg)) != cudaSuccess) return int(e);
    if (active <= 0) return -1;
    clusters = active;
  }
  last_grid_blocks() = cluster * clusters;  // before the clamp to the work: what the GPU can hold at once
  if (work < clusters) clusters = int(work);
  cfg.gridDim = dim3(unsigned(cluster * clusters), 1, 1);
  return int(cudaLaunchKernelEx(&cfg, kernel, p));
}

template <class T, int kBN, bool kWNK, int kCluster, bool kMc, int kWG = 2>
int launch_t(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  using C = Cfg<kBN, kWG>;
  Params p;
  if (!make_params(g, enc, C::kBM / (kMc ? kCluster : 1), kBN, &p)) return -2;
  const long long work = (long long)((g.m + C::kBM - 1) / C::kBM) * ((g.n + kBN - 1) / kBN / kCluster);
  return launch_persistent(hopper_gemm_kernel<T, kBN, kWNK, kCluster, kMc, kWG>, C::kThreads, C::kSmem, kCluster, work,
                           g.pdl, s, p);
}

template <class T, int kBN, bool kWNK>
int launch_c(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  switch (g.cluster) {
    case 1:
      if constexpr (kBN == 192)
        if (g.bm == 192) return launch_t<T, kBN, kWNK, 1, false, 3>(g, enc, s);
      return launch_t<T, kBN, kWNK, 1, false>(g, enc, s);
    case 2:
      if constexpr (kBN == 192)
        if (g.bm == 192) return launch_t<T, kBN, kWNK, 2, true, 3>(g, enc, s);
      return g.multicast ? launch_t<T, kBN, kWNK, 2, true>(g, enc, s) : launch_t<T, kBN, kWNK, 2, false>(g, enc, s);
    case 4: return launch_t<T, kBN, kWNK, 4, true>(g, enc, s);
    default: return -1;
  }
}
template <class T, int kBN>
int launch_w(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  return g.w_nk ? launch_c<T, kBN, true>(g, enc, s) : launch_c<T, kBN, false>(g, enc, s);
}
template <class T>
int launch_bn(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  switch (g.bn) {
    case 128: return launch_w<T, 128>(g, enc, s);
    case 192: return launch_w<T, 192>(g, enc, s);
    case 256: return launch_w<T, 256>(g, enc, s);
    default: return -1;
  }
}
// 0: launched; -1: unsupported (see unsupported()); -2: a tensor map was refused; > 0: the cudaError_t of the launch.
inline int launch(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  if (*unsupported(g)) return -1;
  return g.dt == 2 ? launch_bn<__nv_bfloat16>(g, enc, s) : launch_bn<__half>(g, enc, s);
}

}  // namespace kilnrt::bench_hopper_gemm
