// The ping-pong schedule of bench/hopper_gemm_kernel.cuh's GEMM (probe only): each consumer
// warpgroup owns whole 128 x 128 tiles, alternating with the other, so one warpgroup's epilogue runs while the other
// issues its MMAs (in the cooperative kernel both warpgroups share a tile and the tensor cores idle during its
// epilogue). Same producer (TMA ring of kStages slots, here each slot consumed by one warpgroup), same aux producer
// (residual and bias per tile, one epilogue buffer per warpgroup), same epilogue, cluster 1 only.
// A warpgroup's tile: two m64n128k16 per k16 (rows 0-63 and 64-127), 128 float accumulators per thread.
#pragma once
#include "hopper_gemm_kernel.cuh"

namespace kilnrt::bench_hopper_gemm {

struct PingPongCfg {
  static constexpr int kBM = 128, kBN = 128, kBK = 64, kThreads = 384;
  static constexpr int kStages = 5;
  static constexpr int kABytes = kBM * 128, kBBytes = kBN * 128, kStage = kABytes + kBBytes;
  static constexpr int kEpiBytes = kBM * kBN * 2;  // per warpgroup: 4 boxes of 64 rows x 64 columns
  static constexpr int kBiasBytes = kBN * 2;       // per warpgroup
  static constexpr int kBarBytes = 8 * (2 * kStages + 6);
  static constexpr size_t kSmem = size_t(kStages) * kStage + 2 * (kEpiBytes + kBiasBytes) + kBarBytes + 1024;
};

template <class T, bool kWNK>
__global__ void __launch_bounds__(384, 1) hopper_gemm_pingpong_kernel(const __grid_constant__ Params p) {
#if KILNRT_WGMMA
  using C = PingPongCfg;
  constexpr int kS = C::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t raw = attention_mma_detail::smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t epi0 = base + kS * C::kStage;     // warpgroup w's epilogue buffer: epi0 + w * kEpiBytes
  const uint32_t bias0 = epi0 + 2 * C::kEpiBytes;  // warpgroup w's bias: bias0 + w * kBiasBytes
  const uint32_t bars = bias0 + 2 * C::kBiasBytes;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (kS + s); };
  auto aux_full = [&](int w) { return bars + 8u * (2 * kS + w); };
  auto epi_free = [&](int w) { return bars + 8u * (2 * kS + 2 + w); };
  // The mainloops take turns: a warpgroup starts its tile's K steps once the other has issued the previous tile's
  // (mbarrier parity waits must never be more than one phase ahead of the slots they wait on).
  auto turn = [&](int w) { return bars + 8u * (2 * kS + 4 + w); };
  const bool aux = p.has_res || p.bias;

  const int tid = threadIdx.x, wg = tid >> 7;
  const int steps = (p.k + C::kBK - 1) / C::kBK;
  const int row_tiles = (p.m + C::kBM - 1) / C::kBM, col_tiles = (p.n + C::kBN - 1) / C::kBN;
  const TileWalk walk{int(blockIdx.x), int(gridDim.x), col_tiles, row_tiles, 1, 0};
  if (tid == 0) {
    ptx::prefetch_map(&p.a);
    ptx::prefetch_map(&p.w);
    for (int s = 0; s < kS; ++s) {
      ptx::mbar_init(full(s), 1);
      ptx::mbar_init(empty(s), 1);  // the one warpgroup that consumed the slot
    }
    for (int w = 0; w < 2; ++w) {
      ptx::mbar_init(aux_full(w), 1);
      ptx::mbar_init(epi_free(w), 1);
      ptx::mbar_init(turn(w), 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  ptx::allow_next_grid();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      produce_k_steps<C::kBM, C::kBN, kWNK, 1, kS>(p, walk, steps, base, full(0), empty(0), 0);
    } else if (tid == 32 && aux) {
      if (p.has_res) ptx::prefetch_map(&p.r);
      ptx::wait_prior_grids();
      int m0, n0;
#pragma unroll 1
      for (int i = 0; walk.at(i, C::kBM, C::kBN, m0, n0); ++i) {
        const int w = i & 1;
        const uint32_t bias_bytes = p.bias ? uint32_t(min(C::kBN, p.n - n0)) * 2u : 0u;
        ptx::mbar_wait(epi_free(w), ((i >> 1) & 1) ^ 1);
        ptx::mbar_expect_tx(aux_full(w), (p.has_res ? C::kEpiBytes : 0) + bias_bytes);
        if (p.has_res)
          for (int h = 0; h < 2; ++h)
            for (int b = 0; b < 2; ++b)
              ptx::tma_load(epi0 + w * C::kEpiBytes + (h * 2 + b) * 8192, &p.r, aux_full(w), n0 + b * 64, m0 + h * 64);
        if (bias_bytes)
          ptx::bulk_load(bias0 + w * C::kBiasBytes, static_cast<const T*>(p.bias) + n0, bias_bytes, aux_full(w));
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int w = wg - 1;
    const int t128 = tid & 127, warp = t128 >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const bool releaser = t128 == 0;
    const uint32_t epi = epi0 + w * C::kEpiBytes, bias_sm = bias0 + w * C::kBiasBytes;
    int m0, n0;
#pragma unroll 1
    for (int j = 0; walk.at(2 * j + w, C::kBM, C::kBN, m0, n0); ++j) {
      const int i = 2 * j + w;         // this warpgroup's tiles: every other one of the block's
      float acc0[16][4], acc1[16][4];  // rows 0-63 and 64-127 of the tile
#pragma unroll
      for (int q = 0; q < 16; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc0[q][e] = acc1[q][e] = 0.f;
      int it = i * steps;                                               // the ring position of this tile's first step
      if (i > 0) ptx::mbar_wait(turn(w), w ? (j & 1) : ((j - 1) & 1));  // the other's previous tile is issued
#pragma unroll 1
      for (int kt = 0; kt < steps; ++kt, ++it) {
        const int s = it % kS;
        ptx::mbar_wait(full(s), (it / kS) & 1);
        const uint32_t sa = base + s * C::kStage, sb = sa + C::kABytes;
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const uint64_t db =
              kWNK ? wgmma::desc(sb + kk * 32) : kilnrt::bench_wgmma::desc_lbo(sb + kk * 16 * 128, 8192);
          kilnrt::bench_wgmma::mma_ss_wide<T, kWNK ? 0 : 1, 128>(acc0, wgmma::desc(sa + kk * 32), db, 1);
          kilnrt::bench_wgmma::mma_ss_wide<T, kWNK ? 0 : 1, 128>(acc1, wgmma::desc(sa + 64 * 128 + kk * 32), db, 1);
        }
        wgmma::commit();
        wgmma::wait<1>();
        if (releaser && kt > 0) ptx::mbar_arrive(empty((it - 1) % kS));
      }
      if (releaser) ptx::mbar_arrive(turn(1 - w));
      wgmma::wait<0>();
      if (releaser) ptx::mbar_arrive(empty((it - 1) % kS));

      if (aux)
        ptx::mbar_wait(aux_full(w), j & 1);
      else
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + w) : "memory");  // the last tile's stores have read the buffer
#pragma unroll
      for (int q = 0; q < 16; ++q) {
        const float2 bv = bias_pair<T>(p, bias_sm, n0, q * 8 + 2 * t);
#pragma unroll
        for (int hh = 0; hh < 4; ++hh) {  // (row half, row + 8)
          const int h = hh >> 1, r = warp * 16 + g + 8 * (hh & 1);
          const uint32_t addr = epi + (h * 2 + q / 8) * 8192 + r * 128 + (((q % 8) ^ (r & 7)) << 4) + 4 * t;
          const float* a = h ? acc1[q] : acc0[q];
          finish_pair<T>(p, addr, a[2 * (hh & 1)], a[2 * (hh & 1) + 1], bv);
        }
      }
      wgmma::proxy_fence();
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + w) : "memory");
      if (t128 == 0) {
        for (int h = 0; h < 2; ++h)
          for (int b = 0; b < 2; ++b) ptx::tma_store(&p.y, epi + (h * 2 + b) * 8192, n0 + b * 64, m0 + h * 64);
        ptx::tma_store_commit_and_drain();
        if (aux) ptx::mbar_arrive(epi_free(w));
      }
    }
  }
#endif
}

// The ping-pong launcher: 128 x 128 tiles, no cluster (g.bn and g.cluster are ignored).
template <class T, bool kWNK>
int launch_pingpong_t(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  using C = PingPongCfg;
  Params p;
  if (!make_params(g, enc, C::kBM, C::kBN, &p)) return -2;
  const long long tiles = (long long)((g.m + C::kBM - 1) / C::kBM) * ((g.n + C::kBN - 1) / C::kBN);
  // Two tiles per block at once (one per consumer warpgroup).
  return launch_persistent(hopper_gemm_pingpong_kernel<T, kWNK>, C::kThreads, C::kSmem, 1, (tiles + 1) / 2, g.pdl, s,
                           p);
}

// 0: launched; -1: unsupported; -2: a tensor map was refused; > 0: the cudaError_t of the launch.
inline int launch_pingpong(const Problem& g, EncodeTiledFn enc, cudaStream_t s) {
  Problem q = g;
  q.bn = 128;
  q.cluster = 1;
  if (*unsupported(q)) return -1;
  if (g.dt == 2)
    return g.w_nk ? launch_pingpong_t<__nv_bfloat16, true>(q, enc, s)
                  : launch_pingpong_t<__nv_bfloat16, false>(q, enc, s);
  return g.w_nk ? launch_pingpong_t<__half, true>(q, enc, s) : launch_pingpong_t<__half, false>(q, enc, s);
}

}  // namespace kilnrt::bench_hopper_gemm
