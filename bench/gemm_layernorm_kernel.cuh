// A GEMM + bias + residual + LayerNorm kernel on Hopper's warpgroup MMA, for bench/gemm_layernorm_probe.cu only:
// Y = LayerNorm(A W + bias [+ R]) * gamma + beta over rows of N = 128..2048 values, float16 / bfloat16 storage,
// float32 accumulation and statistics, sm_90a. Measured on an H100 (2026-11-23) and NOT used by the engine: at BERT
// b32's shapes it took 1.39x (out-projection, 4096 x 768 x 768) to 1.55x (fc2, K = 3072) the time of cuBLASLt's GEMM
// followed by kilnrt's LayerNorm kernel (bench/results/gemm_layernorm_probe_h100_2026-11-23.md). Kept as the record
// of what was tried and as the starting point of a TMA version.
//
// Tiling: a block of kWG warpgroups (128 threads each) computes 64 * kWG rows by kBN columns; a cluster of
// C = N / kBN blocks along x covers whole rows. K is walked in steps of 64: the A tile and the W tile are copied
// with cp.async into a kStages-deep ring of shared-memory slots in the 128-byte swizzle wgmma reads (A and a [N, K] W
// K-major; a [K, N] W MN-major, atoms of 64 rows x 64 columns, 8 KB apart). Each warpgroup issues one m64nBNk16 per
// 16 K values. Epilogue: + bias, + residual (staged in shared memory), rounded to the storage dtype; each block's
// per-row mean and M2 over its columns are combined across the cluster through distributed shared memory (Chan's
// formula), then the normalized tile is written with 16-byte stores.
// What the parts cost (probe modes, out-projection, block 128 x 256): the K loop alone 11.7 us against 10.75 us for
// cuBLASLt's whole GEMM; the cluster exchange ~1.8 us; the residual staging ~1.7 us; the stores ~2.1 us. No runtime
// branch may sit between the wgmma instructions: ptxas then injects warpgroup.arrive before each (info C7519) and
// the MMAs serialize (the K loop took 15 us that way). A Hopper GEMM at cuBLAS's speed needs TMA loads multicast
// across the cluster (the A tile is the same for its C blocks) and producer / consumer warpgroups; cp.async from every
// thread does not get there.
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"
#include "cuda/kernels/wgmma_common.cuh"
#include "wgmma_wide.cuh"

namespace kilnrt::bench_gemm_ln {

struct GemmLayerNormArgs {
  int dt = 1;                      // 1 float16, 2 bfloat16
  bool trans_b = false;            // W is [N, K] (else [K, N])
  const void* a = nullptr;         // [M, K]
  const void* w = nullptr;         // [K, N] or [N, K]
  const void* bias = nullptr;      // [N] or null
  const void* residual = nullptr;  // [M, N] or null
  const void* gamma = nullptr;     // [N] or null (1)
  const void* beta = nullptr;      // [N] or null (0)
  void* y = nullptr;               // [M, N]; may not alias A, W or R
  int64_t m = 0, n = 0, k = 0;
  float eps = 1e-5f;
  int rows_per_block = 0;     // 64 or 128; 0: the launcher's choice
  int columns_per_block = 0;  // 128, 192 or 256 (dividing N into at most 8 blocks); 0: the launcher's choice
  // 0: the kernel. To time its parts (the results are then wrong): 2 no K-loop copies, 3 no epilogue, 4 no cluster
  // exchange, 5 no epilogue staging, 6 no stores; 7: the kernel with copies kStages - 1 steps ahead
  int probe_mode = 0;
};

namespace {

namespace cg = cooperative_groups;
#define PROBE_MODE p.probe_mode
using kilnrt::cuda::kernels::wgmma::swz;
namespace wgmma = kilnrt::cuda::kernels::wgmma;
namespace launch_common = kilnrt::cuda::kernels::launch_common;
using kilnrt::cuda::kernels::attention_mma_detail::cp_async16;  // cp.async and addresses: the attention kernels'
using kilnrt::cuda::kernels::attention_mma_detail::cp_async_commit;
using kilnrt::cuda::kernels::attention_mma_detail::cp_async_wait;
using kilnrt::cuda::kernels::attention_mma_detail::smem_addr;

constexpr int kBK = 64;  // K values per step (128 bytes of 16-bit storage: one swizzle atom)
constexpr int kMaxCluster = 8;

// Two adjacent 16-bit values of shared memory <-> float2 (the attention kernels' Bits16), and float32 rounded to T.
template <class T>
struct Pair {
  using B = kilnrt::cuda::kernels::attention_mma_detail::Bits16<T>;
  static __device__ __forceinline__ float2 load(const void* p) {
    return B::unpack(*static_cast<const typename B::Pair*>(p));
  }
  static __device__ __forceinline__ void store(void* p, float a, float b) {
    *static_cast<uint32_t*>(p) = B::pack(a, b);
  }
  static __device__ __forceinline__ float round(float v) {
    return kilnrt::cuda::kernels::storage16::to_f(kilnrt::cuda::kernels::storage16::from_f<T>(v));
  }
};

template <int kWG, int kBN, int kStages>
struct Shape {
  static constexpr int kBM = 64 * kWG, kThreads = 128 * kWG;
  static constexpr int kABytes = kBM * wgmma::kRowBytes, kBBytes = kBN * wgmma::kRowBytes;
  static constexpr int kSlot = kABytes + kBBytes;
  // The epilogue's staging, in the slots once the K loop is done: the residual tile (rows padded by 16 bytes: the
  // 8 rows a warp reads at once fall in distinct banks), then bias, gamma and beta.
  static constexpr int kResRow = kBN * 2 + 16, kResBytes = kBM * kResRow, kVecBytes = 3 * kBN * 2;
  static_assert(kResBytes + kVecBytes <= kStages * kSlot, "epilogue staging must fit in the slots");
  // Slots (1024-byte aligned), each row's (mean, M2) for the cluster exchange, slack to align the first slot.
  static constexpr size_t kSmem = size_t(kStages) * kSlot + kBM * 2 * sizeof(float) + 1024;
};

template <class T, int kWG, int kBN, int kStages, bool kWNK>
struct Copier {
  using S = Shape<kWG, kBN, kStages>;
  // Copies K step `kt` (values kt*64 .. +63) of A's rows m0.. and W's columns n0.. into the slot at `slot`.
  static __device__ __forceinline__ void run(unsigned char* slot, const T* a, const T* w, int64_t m, int64_t m0, int n,
                                             int n0, int k, int kt, int tid) {
    const int k0 = kt * kBK;
    constexpr int kAChunks = S::kBM * 8;
#pragma unroll
    for (int i = 0; i < kAChunks / S::kThreads; ++i) {
      const int idx = tid + i * S::kThreads, r = idx >> 3, c = idx & 7;
      const bool ok = m0 + r < m;
      cp_async16(slot + swz(r, c), a + (ok ? (m0 + r) * int64_t(k) + k0 + c * 8 : 0), ok);
    }
    unsigned char* bs = slot + S::kABytes;
    constexpr int kBChunks = kBN * 8;
#pragma unroll
    for (int i = 0; i < kBChunks / S::kThreads; ++i) {
      const int idx = tid + i * S::kThreads;
      if constexpr (kWNK) {  // W [N, K]: row = column of Y, 8 chunks of K
        const int r = idx >> 3, c = idx & 7;
        cp_async16(bs + swz(r, c), w + (n0 + r) * int64_t(k) + k0 + c * 8, true);
      } else {  // W [K, N]: row = K value, kBN / 8 chunks of N, one 8 KB atom per 64 columns
        constexpr int kRowChunks = kBN / 8;
        const int r = idx / kRowChunks, cc = idx % kRowChunks;
        cp_async16(bs + (cc >> 3) * 8192 + swz(r, cc & 7), w + (k0 + r) * int64_t(n) + n0 + cc * 8, true);
      }
    }
  }
};

template <class T, int kWG, int kBN, int kStages, bool kWNK, bool kDeep>
__global__ void __launch_bounds__(128 * kWG, 1) gemm_layernorm_kernel(GemmLayerNormArgs p) {
#if KILNRT_WGMMA
  using S = Shape<kWG, kBN, kStages>;
  using P = Pair<T>;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* base = smem + ((1024u - (smem_addr(smem) & 1023u)) & 1023u);
  const uint32_t base_u32 = smem_addr(base);
  float2* row_part = reinterpret_cast<float2*>(base + size_t(kStages) * S::kSlot);  // (mean, M2) of each row

  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp4 = (tid >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  const int n0 = blockIdx.x * kBN;
  const int64_t m0 = int64_t(blockIdx.y) * S::kBM;
  const T* a = static_cast<const T*>(p.a);
  const T* w = static_cast<const T*>(p.w);
  const T* res = static_cast<const T*>(p.residual);
  using Cp = Copier<T, kWG, kBN, kStages, kWNK>;
  const int steps = k / kBK;
  constexpr int kRowChunks = kBN / 8;  // 16-byte chunks per tile row

  // The residual tile is read after the K loop: ask L2 for it now (one 128-byte line per request).
  if (res && PROBE_MODE != 5)
    for (int idx = tid; idx < S::kBM * (kBN / 64); idx += S::kThreads) {
      const int r = idx / (kBN / 64), c = idx % (kBN / 64);
      if (m0 + r < p.m) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(res + (m0 + r) * n + n0 + c * 64));
    }

  constexpr int kJ = kBN / 8;  // n8 tiles per thread
  float acc[kJ][4];
#pragma unroll
  for (int j = 0; j < kJ; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;

  // kDeep: the MMAs of a step are waited for within it, so its slot is free at the next barrier and copies run
  // kStages - 1 steps ahead; else copies run kStages - 2 steps ahead and the MMAs of a step overlap the next one.
  constexpr int kAhead = kDeep ? kStages - 1 : kStages - 2;
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < steps && PROBE_MODE != 2) Cp::run(base + s * S::kSlot, a, w, p.m, m0, n, n0, k, s, tid);
    cp_async_commit();
  }
#pragma unroll 1
  for (int kt = 0; kt < steps; ++kt) {
    cp_async_wait<kAhead - 1>();  // step kt has landed (this thread's copies)
    wgmma::proxy_fence();
    __syncthreads();  // ... everyone's; and every warpgroup is done with the slot refilled below
    const int next = kt + kAhead;
    if (next < steps && PROBE_MODE != 2)
      Cp::run(base + (next % kStages) * S::kSlot, a, w, p.m, m0, n, n0, k, next, tid);
    cp_async_commit();
    const uint32_t slot = base_u32 + (kt % kStages) * S::kSlot;
    const uint32_t a_sm = slot + wg * 64 * wgmma::kRowBytes, b_sm = slot + S::kABytes;
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const uint64_t da = wgmma::desc(a_sm + kk * 32);
      // W [N, K]: K-major, N rows of 128 bytes; W [K, N]: MN-major, 16 K rows per step, atoms of 64 columns 8 KB apart.
      const uint64_t db =
          kWNK ? wgmma::desc(b_sm + kk * 32) : kilnrt::bench_wgmma::desc_lbo(b_sm + kk * 16 * wgmma::kRowBytes, 8192);
      kilnrt::bench_wgmma::mma_ss_wide<T, kWNK ? 0 : 1, kBN>(acc, da, db, 1);
    }
    wgmma::commit();
    if constexpr (kDeep) {
      wgmma::wait<0>();
    } else {
      wgmma::wait<1>();  // the MMAs of step kt - 1 are done: its slot is refilled after the next barrier
    }
  }
  wgmma::wait<0>();
  __syncthreads();  // every warpgroup is done with the slots
  if (PROBE_MODE == 3) {
    if (acc[0][0] == 12345.f) static_cast<T*>(p.y)[0] = T();
    return;
  }

  // ---- epilogue -------------------------------------------------------------------------------------------------
  // Stage the residual tile and the bias / gamma / beta columns in shared memory (one round of loads in flight).
  unsigned char* tile_sm = base;                // residual in, normalized output out (rows padded)
  unsigned char* vec_sm = base + S::kResBytes;  // bias, gamma, beta: kBN values each
  auto vec_src = [&](int v) { return static_cast<const T*>(v == 0 ? p.bias : v == 1 ? p.gamma : p.beta); };
  if (res && PROBE_MODE != 5)
    for (int idx = tid; idx < S::kBM * kRowChunks; idx += S::kThreads) {
      const int r = idx / kRowChunks, c = idx % kRowChunks;
      const bool ok = m0 + r < p.m;
      cp_async16(base + r * S::kResRow + c * 16, res + (ok ? (m0 + r) * n + n0 + c * 8 : 0), ok);
    }
  for (int idx = tid; idx < 3 * kRowChunks; idx += S::kThreads) {
    const int v = idx / kRowChunks, c = idx % kRowChunks;
    const T* src = vec_src(v);
    if (src && PROBE_MODE != 5) cp_async16(base + S::kResBytes + v * kBN * 2 + c * 16, src + n0 + c * 8, true);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  auto vec = [&](int v, int col, float dflt) {
    return vec_src(v) ? P::load(vec_sm + v * kBN * 2 + col * 2) : make_float2(dflt, dflt);
  };

  const int lr0 = wg * 64 + warp4 * 16 + g;  // this thread's rows: lr0 and lr0 + 8 of the tile
  float s[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int col = j * 8 + 2 * t;  // in the block
    const float2 bv = vec(0, col, 0.f);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float2 rv = make_float2(0.f, 0.f);
      if (res) rv = P::load(tile_sm + (lr0 + 8 * h) * S::kResRow + col * 2);
      float& v0 = acc[j][2 * h];
      float& v1 = acc[j][2 * h + 1];
      v0 = P::round(v0 + bv.x + rv.x);
      v1 = P::round(v1 + bv.y + rv.y);
      s[h] += v0 + v1;
    }
  }
  // The block's mean and sum of squared deviations (M2) of each row over its kBN columns, exactly (two passes over
  // the registers); the cluster's blocks combine theirs (Chan et al.: M2 = sum M2_i + kBN * sum (mean_i - mean)^2).
  float mean[2], m2[2] = {0.f, 0.f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
    s[h] += __shfl_xor_sync(0xffffffffu, s[h], 2);
    mean[h] = s[h] * (1.f / kBN);
  }
#pragma unroll
  for (int j = 0; j < kJ; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float d0 = acc[j][2 * h] - mean[h], d1 = acc[j][2 * h + 1] - mean[h];
      m2[h] += d0 * d0 + d1 * d1;
    }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m2[h] += __shfl_xor_sync(0xffffffffu, m2[h], 1);
    m2[h] += __shfl_xor_sync(0xffffffffu, m2[h], 2);
  }
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned ranks = cluster.num_blocks();
  if (t == 0) {
    row_part[lr0] = make_float2(mean[0], m2[0]);
    row_part[lr0 + 8] = make_float2(mean[1], m2[1]);
  }
  float rstd[2], row_mean[2];
  if (PROBE_MODE != 4) {
    cluster.sync();
    float2 part[kMaxCluster][2];
    float tot[2] = {0.f, 0.f};
    for (unsigned r = 0; r < ranks; ++r) {
      const float2* rp = cluster.map_shared_rank(row_part, r);
      part[r][0] = rp[lr0];
      part[r][1] = rp[lr0 + 8];
      tot[0] += part[r][0].x;
      tot[1] += part[r][1].x;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_mean[h] = tot[h] / float(ranks);
      float q = 0.f;
      for (unsigned r = 0; r < ranks; ++r) {
        const float d = part[r][h].x - row_mean[h];
        q += part[r][h].y + float(kBN) * d * d;
      }
      rstd[h] = rsqrtf(q / float(n) + p.eps);
    }
  } else {
    row_mean[0] = mean[0], row_mean[1] = mean[1];
    rstd[0] = rsqrtf(m2[0] / kBN + p.eps), rstd[1] = rsqrtf(m2[1] / kBN + p.eps);
  }
  // Normalize into the staging tile (each thread overwrites the residual values it read), then copy whole rows out.
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int col = j * 8 + 2 * t;
    const float2 gv = vec(1, col, 1.f), bv = vec(2, col, 0.f);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      P::store(tile_sm + (lr0 + 8 * h) * S::kResRow + col * 2, (acc[j][2 * h] - row_mean[h]) * rstd[h] * gv.x + bv.x,
               (acc[j][2 * h + 1] - row_mean[h]) * rstd[h] * gv.y + bv.y);
  }
  __syncthreads();
  T* y = static_cast<T*>(p.y);
  if (PROBE_MODE != 6)
    for (int idx = tid; idx < S::kBM * kRowChunks; idx += S::kThreads) {
      const int r = idx / kRowChunks, c = idx % kRowChunks;
      if (m0 + r < p.m)
        *reinterpret_cast<uint4*>(y + (m0 + r) * n + n0 + c * 8) =
            *reinterpret_cast<const uint4*>(tile_sm + r * S::kResRow + c * 16);
    }
  if (PROBE_MODE != 4) cluster.sync();  // no block leaves while another may still read its partial sums
#endif
}

template <class T, int kWG, int kBN, bool kWNK, bool kDeep>
int launch(const GemmLayerNormArgs& p, cudaStream_t stream) {
  constexpr int kStages = kWG == 1 ? 4 : (kBN == 256 ? 4 : 5);
  using S = Shape<kWG, kBN, kStages>;
  auto kernel = gemm_layernorm_kernel<T, kWG, kBN, kStages, kWNK, kDeep>;
  const cudaError_t attr = cudaFuncSetAttribute(
      reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(S::kSmem));
  if (attr != cudaSuccess) return static_cast<int>(attr);
  const int64_t row_blocks = (p.m + S::kBM - 1) / S::kBM;
  if (row_blocks > 65535) return static_cast<int>(cudaErrorInvalidValue);
  const unsigned cluster = static_cast<unsigned>(p.n / kBN);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cluster, static_cast<unsigned>(row_blocks), 1);
  cfg.blockDim = dim3(S::kThreads, 1, 1);
  cfg.dynamicSmemBytes = S::kSmem;
  cfg.stream = stream;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = cluster;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, p);
  return e != cudaSuccess ? static_cast<int>(e) : launch_common::launch_status();
}

// The block width: the widest of 256, 192 and 128 columns that splits N into at most 8 blocks. (BERT / ViT-B's 768 =
// 3 x 256: 96 blocks at 4096 rows, in one wave; 4 x 192 makes 32 clusters of 4, and the H100 holds only 30 such
// clusters at once.)
int block_columns(const GemmLayerNormArgs& p) {
  auto fits = [&](int bn) { return p.n % bn == 0 && p.n / bn <= kMaxCluster; };
  if (p.columns_per_block != 0) return fits(p.columns_per_block) ? p.columns_per_block : 0;
  for (int bn : {256, 192, 128})
    if (fits(bn)) return bn;
  return 0;
}

template <class T, int kWG, bool kWNK, bool kDeep = false>
int launch_bn(const GemmLayerNormArgs& p, cudaStream_t s) {
  if constexpr (!kDeep)
    if (p.probe_mode == 7) return launch_bn<T, kWG, kWNK, true>(p, s);
  switch (block_columns(p)) {
    case 128: return launch<T, kWG, 128, kWNK, kDeep>(p, s);
    case 192: return launch<T, kWG, 192, kWNK, kDeep>(p, s);
    case 256: return launch<T, kWG, 256, kWNK, kDeep>(p, s);
    default: return -1;
  }
}

template <class T>
int launch_t(const GemmLayerNormArgs& p, cudaStream_t s) {
  const bool two = p.rows_per_block == 128 || (p.rows_per_block == 0 && p.m >= 2048);
  if (p.trans_b) return two ? launch_bn<T, 2, true>(p, s) : launch_bn<T, 1, true>(p, s);
  return two ? launch_bn<T, 2, false>(p, s) : launch_bn<T, 1, false>(p, s);
}

}  // namespace

inline const char* gemm_layernorm_unsupported(const GemmLayerNormArgs& p) {
  if (p.dt != 1 && p.dt != 2) return "storage must be float16 or bfloat16";
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "empty problem";
  if (p.k % kBK != 0 || p.k > (int64_t(1) << 30)) return "K must be a multiple of 64";
  if (p.columns_per_block != 0 && p.columns_per_block != 128 && p.columns_per_block != 192 &&
      p.columns_per_block != 256)
    return "columns per block: 128, 192 or 256";
  if (block_columns(p) == 0) return "N must split into at most 8 blocks of 128, 192 or 256 columns";
  if (p.rows_per_block != 0 && p.rows_per_block != 64 && p.rows_per_block != 128) return "rows per block: 64 or 128";
  using launch_common::aligned16;
  if (!p.a || !p.w || !p.y) return "A, W and Y are required";
  if (!aligned16(p.a) || !aligned16(p.w) || !aligned16(p.y) || !aligned16(p.bias) || !aligned16(p.residual) ||
      !aligned16(p.gamma) || !aligned16(p.beta))
    return "pointers must be 16-byte aligned";
  return "";
}

// Launches on `s`. Returns -1 without launching when unsupported, else the launch status.
inline int gemm_layernorm(const GemmLayerNormArgs& p, cudaStream_t s) {
  if (*gemm_layernorm_unsupported(p) != '\0') return -1;
  return p.dt == 1 ? launch_t<__half>(p, s) : launch_t<__nv_bfloat16>(p, s);
}

}  // namespace kilnrt::bench_gemm_ln
