// Fused attention kernels (see attention.h). One block of 128 threads (4 warps) owns 64 query rows of one batch
// entry and walks the keys in tiles of 64: S = Q K^T for the tile (tensor cores for 16-bit storage, else SIMT float
// math), an online softmax per row in registers (two threads per row, 32 scores each), then O += P V. The running
// output lives in shared memory (tensor-core path) or registers (SIMT path) and is divided by the row sum at the end.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "ops/nn/fused_attention/cuda/attention.h"
#include "ops/nn/fused_attention/cuda/attention_mma.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/storage16.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
namespace wmma = nvcuda::wmma;

constexpr int kRows = 64;    // query rows per block
constexpr int kKeys = 64;    // keys per tile
constexpr int kBlock = 128;  // threads: 4 warps x 16 rows, two threads per row
constexpr unsigned kFull = 0xffffffffu;

__host__ __device__ __forceinline__ int64_t imin64(int64_t a, int64_t b) { return a < b ? a : b; }

using storage16::from_f;  // storage16.cuh
using storage16::to_f;

// Copies `rows` x `cols` elements (row stride rs, element stride cs, in T) into shared memory as S (row stride ld),
// zero-filling rows >= valid. vec: 16-byte loads (cs == 1, aligned rows; only when S == T).
template <class T, class S>
__device__ void load_tile(S* dst, int ld, const T* src, int64_t rs, int64_t cs, int valid, int cols, bool vec,
                          int rows = kRows) {
  constexpr int kE = 16 / sizeof(T);
  if (vec) {
    const int cv = cols / kE;
    for (int idx = threadIdx.x; idx < rows * cv; idx += blockDim.x) {
      const int r = idx / cv, c = (idx - r * cv) * kE;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (r < valid) x = *reinterpret_cast<const uint4*>(src + r * rs + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = x;
    }
    return;
  }
  // Consecutive threads walk the unit-stride dim (rows when the tile is stored transposed, e.g. K from K^T).
  const bool by_rows = rs == 1 && cs != 1;
  for (int idx = threadIdx.x; idx < rows * cols; idx += blockDim.x) {
    const int r = by_rows ? idx % rows : idx / cols;
    const int c = by_rows ? idx / rows : idx - r * cols;
    const float x = r < valid ? to_f(src[r * rs + c * cs]) : 0.f;
    dst[r * ld + c] = from_f<S>(x);
  }
}

// Scale, mask and online-softmax update of this thread's kN scores of one row (the row's other scores are held by
// the kLanes - 1 neighbouring lanes). On return s[] holds the unnormalised weights, alpha the factor for the running
// output. While every score seen so far is -inf, the weights are 1 for valid keys (a fully masked row is uniform).
template <int kN, int kLanes, class T>
__device__ __forceinline__ void softmax_step(float (&s)[kN], int key0, int sk, const T* mrow, int64_t mcs, float scale,
                                             float& m, float& l, float& alpha) {
  float mt = -INFINITY;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const int key = key0 + i;
    float x = s[i] * scale;
    if (mrow && key < sk) x += to_f(mrow[key * mcs]);
    s[i] = key < sk ? x : -INFINITY;
    mt = fmaxf(mt, s[i]);
  }
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) mt = fmaxf(mt, __shfl_xor_sync(kFull, mt, o));
  const float mn = fmaxf(m, mt);
  float sum = 0.f;
  if (mn == -INFINITY) {
    alpha = 1.f;
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      s[i] = key0 + i < sk ? 1.f : 0.f;
      sum += s[i];
    }
  } else {
    alpha = m == -INFINITY ? 0.f : expf(m - mn);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      s[i] = expf(s[i] - mn);
      sum += s[i];
    }
  }
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) sum += __shfl_xor_sync(kFull, sum, o);
  l = l * alpha + sum;
  m = mn;
}

struct BlockPos {
  int64_t q0;  // first query row of the block
  int64_t b0, b1;
};
__device__ __forceinline__ BlockPos block_pos(const AttentionArgs& a, int64_t qtiles, int rows) {
  const int64_t blk = blockIdx.x;
  const int64_t bb = blk / qtiles;
  return {(blk - bb * qtiles) * rows, bb / a.b1, bb % a.b1};
}

// ---- tensor cores (16-bit storage, D and Dv multiples of 16) ------------------------------------------------------
template <class T>
__global__ void __launch_bounds__(kBlock)
    attention_wmma(AttentionArgs a, int64_t qtiles, bool qvec, bool kvec, bool vvec) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int d = static_cast<int>(a.d), dv = static_cast<int>(a.dv);
  const int ldq = d + 8, ldv = dv + 8, lds = kKeys + 4, ldo = dv + 4;
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kRows * ldq;
  T* vs = ks + kKeys * ldq;
  float* ss = reinterpret_cast<float*>(vs + kKeys * ldv);  // scores; P (T) is written over each row's start
  float* os = ss + kRows * lds;
  const BlockPos p = block_pos(a, qtiles, kRows);
  const T* q = static_cast<const T*>(a.q) + p.b0 * a.qs[0] + p.b1 * a.qs[1];
  const T* k = static_cast<const T*>(a.k) + p.b0 * a.ks[0] + p.b1 * a.ks[1];
  const T* v = static_cast<const T*>(a.v) + p.b0 * a.vs[0] + p.b1 * a.vs[1];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int row = warp * 16 + (lane >> 1), h = lane & 1;
  const int64_t qi = p.q0 + row;
  const T* mrow =
      a.mask && qi < a.sq ? static_cast<const T*>(a.mask) + p.b0 * a.ms[0] + p.b1 * a.ms[1] + qi * a.ms[2] : nullptr;
  for (int i = tid; i < kRows * ldo; i += kBlock) os[i] = 0.f;
  load_tile<T, T>(qs, ldq, q + p.q0 * a.qs[2], a.qs[2], a.qs[3], static_cast<int>(imin64(kRows, a.sq - p.q0)), d, qvec);
  float m = -INFINITY, l = 0.f;
  const int half = (dv + 1) / 2, c0 = h * half, c1 = min(dv, c0 + half);
  for (int64_t kt = 0; kt < a.sk; kt += kKeys) {
    __syncthreads();  // the previous tile's K / V are no longer read
    const int valid = static_cast<int>(imin64(kKeys, a.sk - kt));
    load_tile<T, T>(ks, ldq, k + kt * a.ks[2], a.ks[2], a.ks[3], valid, d, kvec);
    load_tile<T, T>(vs, ldv, v + kt * a.vs[2], a.vs[2], a.vs[3], valid, dv, vvec);
    __syncthreads();
    for (int j = 0; j < kKeys / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int kk = 0; kk < d; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, qs + warp * 16 * ldq + kk, ldq);
        wmma::load_matrix_sync(fb, ks + j * 16 * ldq + kk, ldq);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(ss + warp * 16 * lds + j * 16, acc, lds, wmma::mem_row_major);
    }
    __syncwarp();
    float s[32];
    const float* srow = ss + row * lds + h * 32;
#pragma unroll
    for (int i = 0; i < 32; ++i) s[i] = srow[i];
    float alpha;
    softmax_step<32, 2>(s, static_cast<int>(kt) + h * 32, static_cast<int>(a.sk), mrow, a.ms[3], a.scale, m, l, alpha);
    __syncwarp();  // both threads of the row have read their scores before P overwrites them
    T* prow = reinterpret_cast<T*>(ss + row * lds) + h * 32;
#pragma unroll
    for (int i = 0; i < 32; ++i) prow[i] = from_f<T>(s[i]);
    float* orow = os + row * ldo;
    for (int c = c0; c < c1; ++c) orow[c] *= alpha;
    __syncwarp();
    const T* pw = reinterpret_cast<const T*>(ss + warp * 16 * lds);
    for (int j = 0; j < dv; j += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, os + warp * 16 * ldo + j, ldo, wmma::mem_row_major);
      for (int kk = 0; kk < kKeys; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, pw + kk, lds * 2);
        wmma::load_matrix_sync(fb, vs + kk * ldv + j, ldv);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(os + warp * 16 * ldo + j, acc, ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (qi >= a.sq) return;
  const float inv = l > 0.f && !(a.zero_masked_rows && m == -INFINITY) ? 1.f / l : 0.f;
  T* o = static_cast<T*>(a.o) + p.b0 * a.os[0] + p.b1 * a.os[1] + qi * a.os[2];
  const float* orow = os + row * ldo;
  for (int c = c0; c < c1; ++c) o[c * a.os[3]] = from_f<T>(orow[c] * inv);
}

// ---- SIMT (float32 math in shared memory; any storage dtype, D and Dv <= 128) -------------------------------------
// 32 query rows per block (more blocks for small batches), 4 threads per row: 16 scores and Dv / 4 outputs each.
constexpr int kSimtRows = 32;
template <class T>
__global__ void __launch_bounds__(kBlock)
    attention_simt(AttentionArgs a, int64_t qtiles, bool /*qvec*/, bool /*kvec*/, bool /*vvec*/) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int d = static_cast<int>(a.d), dv = static_cast<int>(a.dv);
  const int ldq = d + 1, ldv = dv + 1, ldp = kKeys + 1;
  float* qs = reinterpret_cast<float*>(smem);
  float* ks = qs + kSimtRows * ldq;
  float* vs = ks + kKeys * ldq;
  float* ps = vs + kKeys * ldv;
  const BlockPos p = block_pos(a, qtiles, kSimtRows);
  const T* q = static_cast<const T*>(a.q) + p.b0 * a.qs[0] + p.b1 * a.qs[1];
  const T* k = static_cast<const T*>(a.k) + p.b0 * a.ks[0] + p.b1 * a.ks[1];
  const T* v = static_cast<const T*>(a.v) + p.b0 * a.vs[0] + p.b1 * a.vs[1];
  const int tid = threadIdx.x;
  const int row = tid >> 2, qh = tid & 3;
  const int64_t qi = p.q0 + row;
  const T* mrow =
      a.mask && qi < a.sq ? static_cast<const T*>(a.mask) + p.b0 * a.ms[0] + p.b1 * a.ms[1] + qi * a.ms[2] : nullptr;
  load_tile<T, float>(qs, ldq, q + p.q0 * a.qs[2], a.qs[2], a.qs[3], static_cast<int>(imin64(kSimtRows, a.sq - p.q0)),
                      d, false, kSimtRows);
  const int quarter = (dv + 3) / 4, c0 = qh * quarter;
  const int nout = max(0, min(quarter, dv - c0));
  float o[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) o[i] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int64_t kt = 0; kt < a.sk; kt += kKeys) {
    __syncthreads();
    const int valid = static_cast<int>(imin64(kKeys, a.sk - kt));
    load_tile<T, float>(ks, ldq, k + kt * a.ks[2], a.ks[2], a.ks[3], valid, d, false);
    load_tile<T, float>(vs, ldv, v + kt * a.vs[2], a.vs[2], a.vs[3], valid, dv, false);
    __syncthreads();
    float s[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) s[i] = 0.f;
    const float* qrow = qs + row * ldq;
    const float* kb = ks + qh * 16 * ldq;
    for (int c = 0; c < d; ++c) {
      const float x = qrow[c];
#pragma unroll
      for (int i = 0; i < 16; ++i) s[i] = fmaf(x, kb[i * ldq + c], s[i]);
    }
    float alpha;
    softmax_step<16, 4>(s, static_cast<int>(kt) + qh * 16, static_cast<int>(a.sk), mrow, a.ms[3], a.scale, m, l, alpha);
    float* prow = ps + row * ldp + qh * 16;
#pragma unroll
    for (int i = 0; i < 16; ++i) prow[i] = s[i];
#pragma unroll
    for (int i = 0; i < 32; ++i) o[i] *= alpha;
    __syncwarp();  // the row's other weights are written by its neighbouring lanes
    const float* pr = ps + row * ldp;
    for (int j = 0; j < valid; ++j) {
      const float w = pr[j];
      const float* vr = vs + j * ldv + c0;
#pragma unroll
      for (int i = 0; i < 32; ++i)
        if (i < nout) o[i] = fmaf(w, vr[i], o[i]);
    }
  }
  if (qi >= a.sq) return;
  const float inv = l > 0.f && !(a.zero_masked_rows && m == -INFINITY) ? 1.f / l : 0.f;
  T* out = static_cast<T*>(a.o) + p.b0 * a.os[0] + p.b1 * a.os[1] + qi * a.os[2];
#pragma unroll
  for (int i = 0; i < 32; ++i)
    if (i < nout) out[(c0 + i) * a.os[3]] = from_f<T>(o[i] * inv);
}

bool aligned16(const void* p, int64_t offset_elems, size_t es) {
  return ((reinterpret_cast<uintptr_t>(p) + uintptr_t(offset_elems) * es) & 15u) == 0;
}
// Rows can be moved with 16-byte loads: unit element stride, every row start 16-byte aligned.
bool vec_ok(const void* p, const int64_t (&s)[4], int64_t cols, size_t es) {
  const int64_t e = 16 / static_cast<int64_t>(es);
  return s[3] == 1 && cols % e == 0 && s[0] % e == 0 && s[1] % e == 0 && s[2] % e == 0 && aligned16(p, 0, es);
}

template <class T>
int launch(const AttentionArgs& a, bool wmma_path, StreamT stream) {
  size_t bytes;
  void (*kernel)(AttentionArgs, int64_t, bool, bool, bool);
  bool tc = false;
  if constexpr (!std::is_same<T, float>::value) {
    if (wmma_path) {
      bytes = sizeof(T) * size_t(kRows * (a.d + 8) + kKeys * (a.d + 8) + kKeys * (a.dv + 8)) +
              sizeof(float) * size_t(kRows * (kKeys + 4) + kRows * (a.dv + 4));
      kernel = attention_wmma<T>;
      tc = true;
    }
  }
  if (!tc) {
    bytes = sizeof(float) *
            size_t(kSimtRows * (a.d + 1) + kKeys * (a.d + 1) + kKeys * (a.dv + 1) + kSimtRows * (kKeys + 1));
    kernel = attention_simt<T>;
  }
  const int rows = tc ? kRows : kSimtRows;
  const int64_t qtiles = (a.sq + rows - 1) / rows;
  const int64_t blocks = a.b0 * a.b1 * qtiles;
  if (blocks == 0) return 0;
  if (blocks > 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  const cudaError_t st = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (st != cudaSuccess) return static_cast<int>(st);
  const size_t es = sizeof(T);
  kernel<<<static_cast<unsigned>(blocks), kBlock, bytes, reinterpret_cast<cudaStream_t>(stream)>>>(
      a, qtiles, vec_ok(a.q, a.qs, a.d, es), vec_ok(a.k, a.ks, a.d, es), vec_ok(a.v, a.vs, a.dv, es));
  return launch_status();
}

}  // namespace

bool attention_uses_tensor_cores(const AttentionArgs& a) {
  return (a.dt == 1 || a.dt == 2) && a.d % 16 == 0 && a.dv % 16 == 0;
}

int attention(const AttentionArgs& a, StreamT stream) {
  if (a.d < 1 || a.dv < 1 || a.d > kAttentionMaxHead || a.dv > kAttentionMaxHead || a.b0 < 0 || a.b1 < 0 || a.sq < 0 ||
      a.sk < 0)
    return static_cast<int>(cudaErrorInvalidValue);
  if (attention_uses_mma(a)) return attention_mma(a, stream);  // FlashAttention-2-style, attention_mma.cu
  const bool tc = attention_uses_tensor_cores(a);
  switch (a.dt) {
    case 0: return launch<float>(a, false, stream);
    case 1: return launch<__half>(a, tc, stream);
    case 2: return launch<__nv_bfloat16>(a, tc, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels
