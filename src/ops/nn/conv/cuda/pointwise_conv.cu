// The pointwise (1x1) convolution GEMM with a fused epilogue (see pointwise_conv.h), on mma.sync tensor cores.
//
// A CTA computes a BM x BN tile of y: its warps are (BM / 32) x 2, each 32 rows x BN / 2 columns of m16n8k16
// tiles. The K loop (C, 32 at a time) streams x and w through a three-stage cp.async pipeline; shared-memory rows
// are 64 bytes with the four 16-byte chunks XOR-swizzled by (row / 2) % 4, which keeps the ldmatrix reads free of
// bank conflicts. Out-of-range rows and channels are zero-filled by cp.async, so any M and any C % 8 == 0 work.
// Epilogue: bias, residual and activation on the float32 accumulators, one rounding into a staging tile in shared
// memory (rows padded by 16 bytes), then 16-byte stores of whole rows: the output, the largest stream of these
// memory-bound convolutions, is written once with full 128-byte lines.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/conv_activation.cuh"
#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/conv/cuda/pointwise_conv.h"

namespace kilnrt::cuda::kernels {
namespace {

namespace ptx = attention_mma_detail;

constexpr int kBK = 32;     // channels per pipeline stage: four 16-byte chunks per row
constexpr int kStages = 3;  // cp.async pipeline depth

template <int BM, int BN>
struct Tile {
  static constexpr int kWarpsM = BM / 32;
  static constexpr int kThreads = kWarpsM * 2 * 32;
  static constexpr int kNT = BN / 16;  // n8 tiles per warp (the warp covers BN / 2 columns)
  static constexpr int kStageElems = (BM + BN) * kBK;
  static constexpr int kLd = BN + 8;  // staging row stride (elements)
  static constexpr int kPipeBytes = kStages * kStageElems * 2;
  static constexpr int kStageOutBytes = BM * kLd * 2;
  static constexpr int kSmemBytes = kPipeBytes > kStageOutBytes ? kPipeBytes : kStageOutBytes;
  // CTAs per SM the register budget is set for: 64 registers a thread up to 64 columns, 80 for wider tiles.
  static constexpr int kMinBlocks = BN > 64 ? 3 : 1024 / kThreads;
  static_assert(kNT % 2 == 0, "B fragments are loaded two n8 tiles at a time");
  static_assert(kSmemBytes <= 48 * 1024, "no opt-in for more dynamic shared memory");
};

// The epilogue activation, resolved at compile time for the common ones (launch_act: none, ReLU, hard swish, SiLU;
// a runtime switch per element made the first version of this kernel instruction-bound: ncu showed the integer pipe
// at 50 % and 7 % of the memory bandwidth). The constant code folds conv_act::activate_fast's switch away (SiLU in
// fast math). kGenericAct: conv_act::activate on the runtime code.
constexpr int kGenericAct = -1;
template <int ACT>
__device__ __forceinline__ float epilogue_act(float v, int act, float a, float b) {
  if constexpr (ACT == kGenericAct)
    return conv_act::activate(act, v, a, b);
  else
    return conv_act::activate_fast(ACT, v, a, b);
}

// Offset (elements) of 16-byte chunk `chunk` (0..3) of row `row` in a swizzled stage buffer.
__device__ __forceinline__ int swz(int row, int chunk) { return (row * 4 + (chunk ^ ((row >> 1) & 3))) * 8; }

struct Params {
  const void* x;
  const void* w;
  const void* bias;
  const void* z;
  void* y;
  int64_t m;
  int c, n;
  int act;
  float a, b;
};

// Registers capped for occupancy (Tile::kMinBlocks): the kernel is memory-bound, occupancy hides the latency.
template <class T, int BM, int BN, int ACT>
__global__ void __launch_bounds__(Tile<BM, BN>::kThreads, Tile<BM, BN>::kMinBlocks) pointwise_conv_kernel(Params p) {
  using Cfg = Tile<BM, BN>;
  using B16 = ptx::Bits16<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % Cfg::kWarpsM, wn = warp / Cfg::kWarpsM;
  // Linear grid, the column tiles of one row tile next to each other: their writes of the same output rows (and
  // their reads of the same x rows) meet in L2 instead of half a kernel apart.
  const int ntiles = (p.n + BN - 1) / BN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x / ntiles) * BM;
  const int n0 = static_cast<int>(blockIdx.x % ntiles) * BN;
  const int ktiles = (p.c + kBK - 1) / kBK;

  // The 16-byte chunks this thread copies per stage: row and chunk are the same in every stage, only the channel
  // offset moves (row pointers and row checks computed once).
  // (B: the last copy of a thread may fall past BN rows when BN * 4 is not a multiple of the thread count.)
  constexpr int kAIters = BM * 4 / Cfg::kThreads, kBIters = (BN * 4 + Cfg::kThreads - 1) / Cfg::kThreads;
  static_assert(BM * 4 % Cfg::kThreads == 0, "whole A chunks per thread");
  const T* a_src[kAIters];
  const T* b_src[kBIters];
  bool a_ok[kAIters], b_ok[kBIters];
  const int ch = tid & 3;  // the same chunk for every copy: the thread index steps by a multiple of 4
#pragma unroll
  for (int j = 0; j < kAIters; ++j) {
    const int row = (tid + j * Cfg::kThreads) >> 2;
    a_ok[j] = m0 + row < p.m;
    a_src[j] = x + (a_ok[j] ? (m0 + row) * p.c : 0) + ch * 8;
  }
#pragma unroll
  for (int j = 0; j < kBIters; ++j) {
    const int row = (tid + j * Cfg::kThreads) >> 2;
    b_ok[j] = row < BN && n0 + row < p.n;
    b_src[j] = w + (b_ok[j] ? static_cast<int64_t>(n0 + row) * p.c : 0) + ch * 8;
  }
  auto load_stage = [&](int stage, int kt) {
    T* as = smem + stage * Cfg::kStageElems;
    T* bs = as + BM * kBK;
    const int k0 = kt * kBK;
    const bool k_ok = k0 + ch * 8 < p.c;
#pragma unroll
    for (int j = 0; j < kAIters; ++j) {
      const int row = (tid + j * Cfg::kThreads) >> 2;
      const bool ok = a_ok[j] && k_ok;
      ptx::cp_async16(as + swz(row, ch), ok ? a_src[j] + k0 : x, ok);
    }
#pragma unroll
    for (int j = 0; j < kBIters; ++j) {
      const int row = (tid + j * Cfg::kThreads) >> 2;
      if (row >= BN) break;  // uniform per warp (BN * 4 is a multiple of 32)
      const bool ok = b_ok[j] && k_ok;
      ptx::cp_async16(bs + swz(row, ch), ok ? b_src[j] + k0 : w, ok);
    }
  };

  float acc[2][Cfg::kNT][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    ptx::cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    ptx::cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is no longer read
    const int pre = kt + kStages - 1;
    if (pre < ktiles) load_stage(pre % kStages, pre);
    ptx::cp_async_commit();
    const T* as = smem + (kt % kStages) * Cfg::kStageElems;
    const T* bs = as + BM * kBK;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t af[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        ptx::ldsm_x4(af[mt], as + swz(wm * 32 + mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int np = 0; np < Cfg::kNT / 2; ++np) {
        uint32_t bf[4];  // b0 / b1 of n8 tile 2 np, then of 2 np + 1
        ptx::ldsm_x4(bf,
                     bs + swz(wn * (BN / 2) + np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          B16::mma(acc[mt][2 * np], af[mt], bf[0], bf[1]);
          B16::mma(acc[mt][2 * np + 1], af[mt], bf[2], bf[3]);
        }
      }
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // the pipeline buffers become the staging tile

  // Epilogue: y = act(acc + bias + z) per accumulator pair (two adjacent columns), rounded once into the staging tile.
  T* st = smem;
  const T* bias = static_cast<const T*>(p.bias);
  const T* z = static_cast<const T*>(p.z);
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
    const int col = wn * (BN / 2) + nt * 8 + 2 * (lane & 3);
    const int gn = n0 + col;
    float2 bv = make_float2(0.f, 0.f);
    if (bias && gn < p.n) bv = B16::unpack(*reinterpret_cast<const typename B16::Pair*>(bias + gn));
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm * 32 + mt * 16 + (lane >> 2) + h * 8;
        float v0 = acc[mt][nt][2 * h] + bv.x, v1 = acc[mt][nt][2 * h + 1] + bv.y;
        const int64_t gm = m0 + row;
        if (z && gm < p.m && gn < p.n) {
          const float2 zv = B16::unpack(*reinterpret_cast<const typename B16::Pair*>(z + gm * p.n + gn));
          v0 += zv.x;
          v1 += zv.y;
        }
        v0 = epilogue_act<ACT>(v0, p.act, p.a, p.b);
        v1 = epilogue_act<ACT>(v1, p.act, p.a, p.b);
        *reinterpret_cast<uint32_t*>(st + row * Cfg::kLd + col) = B16::pack(v0, v1);
      }
    }
  }
  __syncthreads();
  T* y = static_cast<T*>(p.y);
  constexpr int kChunks = BN / 8;  // 16-byte chunks per staged row
  for (int i = tid; i < BM * kChunks; i += Cfg::kThreads) {
    const int row = i / kChunks, ch = i % kChunks;
    const int64_t gm = m0 + row;
    const int gn = n0 + ch * 8;
    if (gm < p.m && gn < p.n)
      *reinterpret_cast<uint4*>(y + gm * p.n + gn) = *reinterpret_cast<const uint4*>(st + row * Cfg::kLd + ch * 8);
  }
}

template <class T, int BM, int BN, int ACT>
int launch(const Params& p, cudaStream_t s) {
  using Cfg = Tile<BM, BN>;
  const int64_t tiles = (p.m + BM - 1) / BM * ((p.n + BN - 1) / BN);
  if (tiles > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid(static_cast<unsigned>(tiles));
  pointwise_conv_kernel<T, BM, BN, ACT><<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(p);
  return launch_common::launch_status();
}

template <class T, int BM, int BN>
int launch_act(const Params& p, cudaStream_t s) {
  switch (p.act) {
    case 0: return launch<T, BM, BN, 0>(p, s);
    case 1: return launch<T, BM, BN, 1>(p, s);
    case 5: return launch<T, BM, BN, 5>(p, s);
    case 7: return launch<T, BM, BN, 7>(p, s);
    default: return launch<T, BM, BN, kGenericAct>(p, s);
  }
}

template <class T>
int dispatch(const Params& p, int variant, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_act<T, 128, 64>(p, s);
    case 1: return launch_act<T, 64, 64>(p, s);
    case 2: return launch_act<T, 128, 96>(p, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

bool aligned(const void* ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

}  // namespace

bool pointwise_conv_applies(const PointwiseConvArgs& a) {
  return (a.dt == 1 || a.dt == 2) && a.x && a.w && a.y && a.m >= 0 && a.m < (int64_t{1} << 31) * 64 && a.c > 0 &&
         a.n > 0 && a.c % 8 == 0 && a.n % 8 == 0 && a.c < (1 << 30) && a.n <= 65535LL * 64 && aligned(a.x, 16) &&
         aligned(a.w, 16) && aligned(a.y, 16) && aligned(a.z, 16) && aligned(a.bias, 4);
}

int pointwise_conv(const PointwiseConvArgs& a, int variant, StreamT stream) {
  if (!pointwise_conv_applies(a) || variant < 0 || variant >= kPointwiseConvVariants)
    return static_cast<int>(cudaErrorInvalidValue);
  if (a.m == 0) return 0;
  Params p{a.x, a.w, a.bias, a.z, a.y, a.m, static_cast<int>(a.c), static_cast<int>(a.n), a.act, a.a, a.b};
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  return a.dt == 1 ? dispatch<__half>(p, variant, s) : dispatch<__nv_bfloat16>(p, variant, s);
}

}  // namespace kilnrt::cuda::kernels
