// Vectorized LayerNormalization (see layernorm.h). Each row is split into 16-byte vectors; a group of G lanes
// (a power of two, G <= 32, aligned inside a warp) holds the row's vectors in registers, NV per lane, so the row is
// read once and written once with 16-byte accesses. Mean and variance in float32, two passes over the registers
// (no cancellation of E[x^2] - E[x]^2, no 16-bit overflow), reduced by shuffles inside the group.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "core/env_switch.h"
#include "cuda/kernels/storage16.cuh"
#include "ops/nn/normalization/cuda/layernorm.h"

namespace kilnrt::cuda::kernels {
namespace {

using storage16::from_f;
using storage16::Pack;
using storage16::to_f;

constexpr int kBlock = 128;

// EmbedLayerNorm's source row of output row r: ids[r], negative ids counted from the end; false (row 0 returned)
// when out of range, where the row reads as zeros (as the Gather kernel's).
__device__ __forceinline__ bool embed_source_row(const LayerNormEmbed& e, int64_t r, int64_t* src) {
  int64_t id = e.ids64 ? static_cast<const int64_t*>(e.ids)[r] : static_cast<const int32_t*>(e.ids)[r];
  if (id < 0) id += e.vocab;
  const bool ok = id >= 0 && id < e.vocab;
  *src = ok ? id : 0;
  return ok;
}

// x and y may be the same buffer (in place): each row is read whole into registers before it is written.
// With e.ids (EmbedLayerNorm), row r of x is the table row ids[r] (zeros when out of range, as Gather's kernel),
// plus row r % e.period of e.addend when given: uniform branches, no extra instantiations.
template <typename T, int G, int NV>
__global__ void __launch_bounds__(kBlock)
    layernorm_vec_kernel(const T* x, const T* __restrict__ scale, const T* __restrict__ bias, T* y, float* mean_out,
                         float* inv_std_out, int64_t rows, int nvec, float eps, LayerNormEmbed e) {
  using P = Pack<T>;
  constexpr int kV = P::kN;
  const int g = threadIdx.x % G;
  const int64_t r = blockIdx.x * int64_t(kBlock / G) + threadIdx.x / G;
  const bool row_ok = r < rows;  // no early return: every lane of the warp takes part in the shuffles
  int64_t src = row_ok ? r : 0;
  bool src_ok = row_ok;
  if (e.ids && row_ok) src_ok = embed_source_row(e, r, &src);
  const P* xr = reinterpret_cast<const P*>(x) + src * int64_t(nvec);
  const P* ar = e.addend && row_ok ? static_cast<const P*>(e.addend) + (r % e.period) * int64_t(nvec) : nullptr;
  float v[NV][kV];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = g + j * G;
    if (row_ok && c < nvec) {
      P p;
      if (src_ok) p = xr[c];
#pragma unroll
      for (int k = 0; k < kV; ++k) v[j][k] = src_ok ? to_f(p.e[k]) : 0.f;
      if (ar) {
        const P q = ar[c];
#pragma unroll
        for (int k = 0; k < kV; ++k) v[j][k] += to_f(q.e[k]);
      }
#pragma unroll
      for (int k = 0; k < kV; ++k) s += v[j][k];
    } else {
#pragma unroll
      for (int k = 0; k < kV; ++k) v[j][k] = 0.f;
    }
  }
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float n = float(nvec) * float(kV);
  const float mean = s / n;
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (g + j * G < nvec) {
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        const float d = v[j][k] - mean;
        q += d * d;
      }
    }
  }
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  const float inv_std = 1.f / sqrtf(q / n + eps);
  if (!row_ok) return;
  if (y) {
    P* yr = reinterpret_cast<P*>(y) + r * int64_t(nvec);
    const P* sc = reinterpret_cast<const P*>(scale);
    const P* bi = reinterpret_cast<const P*>(bias);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int c = g + j * G;
      if (c >= nvec) continue;
      P gs, bs, o;
      if (sc) gs = sc[c];
      if (bi) bs = bi[c];
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        float t = (v[j][k] - mean) * inv_std;
        if (sc) t *= to_f(gs.e[k]);
        if (bi) t += to_f(bs.e[k]);
        o.e[k] = from_f<T>(t);
      }
      yr[c] = o;
    }
  }
  if (g == 0) {
    if (mean_out) mean_out[r] = mean;
    if (inv_std_out) inv_std_out[r] = inv_std;
  }
}

// Persistent warps for 16-bit rows of exactly 32 x NV vectors (BERT / ViT's 768 values: NV 3) with scale and bias
// and no statistics outputs (plain LayerNorm, no EmbedLayerNorm gather or addend): one row per warp at a time, scale
// and bias held in registers across rows, the next row's loads issued before the current row is reduced, pairs
// converted with half2 / bfloat162 instructions; kPersistentBlocks blocks of 256 threads per SM. H100
// (bench/layernorm_probe.cu, 2026-11-23), float16: 6304 x 768 rows (ViT b32) 5.4-5.6 against 7.4-7.7 us for
// layernorm_vec_kernel, 4096 x 768 (BERT b32) 4.5-4.8 against 5.0-5.2; a device-to-device copy of the same bytes
// takes 5.0-5.3 / 4.0-4.5. A generic version (Pack<T> element by element, guarded lanes) ran 6.9 / 5.6 us. In place
// is allowed (x, y not __restrict__): a row is read before it is written, and a prefetch never reads a row being
// written.
constexpr int kPersistentThreads = 256, kPersistentBlocks = 2;

__device__ __forceinline__ float2 pair_to_f(uint32_t v, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&v));
}
__device__ __forceinline__ float2 pair_to_f(uint32_t v, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}
__device__ __forceinline__ uint32_t pair_from_f(float a, float b, __half) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ uint32_t pair_from_f(float a, float b, __nv_bfloat16) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <typename T, int NV>
__global__ void __launch_bounds__(kPersistentThreads, kPersistentBlocks)
    layernorm_rows_kernel(const uint4* x, const uint4* __restrict__ scale, const uint4* __restrict__ bias, uint4* y,
                          int64_t rows, float eps) {
  constexpr int nvec = 32 * NV;
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t(gridDim.x) * (kPersistentThreads / 32);
  int64_t r = blockIdx.x * int64_t(kPersistentThreads / 32) + threadIdx.x / 32;
  uint4 gs[NV], bs[NV], cur[NV], nxt[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    gs[j] = scale[lane + 32 * j];
    bs[j] = bias[lane + 32 * j];
    cur[j] = r < rows ? x[r * nvec + lane + 32 * j] : uint4{};
  }
  constexpr float n = float(nvec) * 8.f;
  for (; r < rows; r += warps) {
    const int64_t rn = r + warps;
#pragma unroll
    for (int j = 0; j < NV; ++j) nxt[j] = rn < rows ? x[rn * nvec + lane + 32 * j] : uint4{};
    float v[NV][8];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(&cur[j]);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = pair_to_f(w[k], T());
        v[j][2 * k] = f.x;
        v[j][2 * k + 1] = f.y;
        s += f.x + f.y;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float mean = s / n;
    float q = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j)
#pragma unroll
      for (int k = 0; k < 8; ++k) q += (v[j][k] - mean) * (v[j][k] - mean);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
    const float inv_std = 1.f / sqrtf(q / n + eps);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const uint32_t* gw = reinterpret_cast<const uint32_t*>(&gs[j]);
      const uint32_t* bw = reinterpret_cast<const uint32_t*>(&bs[j]);
      uint4 o;
      uint32_t* ow = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 g = pair_to_f(gw[k], T()), b = pair_to_f(bw[k], T());
        ow[k] = pair_from_f((v[j][2 * k] - mean) * inv_std * g.x + b.x, (v[j][2 * k + 1] - mean) * inv_std * g.y + b.y,
                            T());
      }
      y[r * nvec + lane + 32 * j] = o;
    }
#pragma unroll
    for (int j = 0; j < NV; ++j) cur[j] = nxt[j];
  }
}

// Whether the persistent kernel takes a 16-bit row of nvec vectors (its preconditions above; 16-byte alignment is
// checked by the caller). KILNRT_LAYERNORM_ROWS=0 (read at every call, for A/B runs) leaves every row to
// layernorm_vec_kernel.
bool rows_kernel_applies(int nvec, const void* scale, const void* bias, const float* mean, const float* inv_std,
                         const LayerNormEmbed& e) {
  return (nvec == 96 || nvec == 128) && scale && bias && !mean && !inv_std && !e.ids && !e.addend &&
         !env_switched_off("KILNRT_LAYERNORM_ROWS");
}

template <typename T, int NV>
int launch_rows(const void* x, const void* scale, const void* bias, void* y, int64_t rows, float eps, cudaStream_t s) {
  constexpr int64_t kRowsPerBlock = kPersistentThreads / 32;
  const int64_t blocks = std::min<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock,
                                           int64_t(kPersistentBlocks) * launch_common::sm_count());
  layernorm_rows_kernel<T, NV><<<static_cast<unsigned>(blocks), kPersistentThreads, 0, s>>>(
      static_cast<const uint4*>(x), static_cast<const uint4*>(scale), static_cast<const uint4*>(bias),
      static_cast<uint4*>(y), rows, eps);
  return launch_common::launch_status();
}

template <typename T, int G, int NV>
int launch(const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std, int64_t rows,
           int nvec, float eps, const LayerNormEmbed& e, cudaStream_t s) {
  constexpr int64_t kRowsPerBlock = kBlock / G;
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks >= 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  layernorm_vec_kernel<T, G, NV><<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), mean,
      inv_std, rows, nvec, eps, e);
  return launch_common::launch_status();
}

// G lanes per row, NV vectors per lane (nvec <= G * NV).
template <typename T, int G>
int launch_nv(int nv, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
              int64_t rows, int nvec, float eps, const LayerNormEmbed& e, cudaStream_t s) {
  switch (nv) {
    case 1: return launch<T, G, 1>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 2: return launch<T, G, 2>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 3: return launch<T, G, 3>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 4: return launch<T, G, 4>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    default: break;
  }
  if constexpr (G == 32) {
    switch (nv) {
      case 5:
      case 6: return launch<T, G, 6>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
      case 7:
      case 8: return launch<T, G, 8>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
      default: break;
    }
  }
  return -1;
}

template <typename T>
int dispatch(const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std, int64_t rows,
             int nvec, float eps, const LayerNormEmbed& e, cudaStream_t s) {
  // The fewest lanes that keep at most 4 vectors each (a warp for wide rows, up to 8 vectors a lane there).
  int g = 1;
  while (g < 32 && g * 4 < nvec) g *= 2;
  const int nv = (nvec + g - 1) / g;
  if constexpr (sizeof(T) == 2) {
    if (rows_kernel_applies(nvec, scale, bias, mean, inv_std, e))
      return nvec == 96 ? launch_rows<T, 3>(x, scale, bias, y, rows, eps, s)
                        : launch_rows<T, 4>(x, scale, bias, y, rows, eps, s);
  }
  switch (g) {
    case 1: return launch_nv<T, 1>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 2: return launch_nv<T, 2>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 4: return launch_nv<T, 4>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 8: return launch_nv<T, 8>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    case 16: return launch_nv<T, 16>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
    default: return launch_nv<T, 32>(nv, x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
  }
}

using launch_common::aligned16;

}  // namespace

int layernorm_vec(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
                  int64_t rows, int64_t n, float eps, StreamT stream) {
  return embed_layernorm_vec(dt, LayerNormEmbed{}, x, scale, bias, y, mean, inv_std, rows, n, eps, stream);
}

int embed_layernorm_vec(int dt, const LayerNormEmbed& e, const void* x, const void* scale, const void* bias, void* y,
                        float* mean, float* inv_std, int64_t rows, int64_t n, float eps, StreamT stream) {
  const int64_t elem = dt == 0 ? 4 : 2;
  if (dt < 0 || dt > 2 || rows <= 0 || n <= 0 || (n * elem) % 16 != 0 || n * elem > kLayerNormVecMaxBytes) return -1;
  if (!aligned16(x) || !aligned16(y) || !aligned16(scale) || !aligned16(bias) || !aligned16(e.addend)) return -1;
  if (e.ids && (x == y || e.vocab <= 0)) return -1;  // the table is read by rows picked at random: not in place
  if (e.addend && e.period <= 0) return -1;
  const int nvec = static_cast<int>(n * elem / 16);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (dt == 0) return dispatch<float>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
  if (dt == 1) return dispatch<__half>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
  return dispatch<__nv_bfloat16>(x, scale, bias, y, mean, inv_std, rows, nvec, eps, e, s);
}

namespace {

// y[r, :] = table[ids[r], :] (zeros out of range) + addend[r % period, :], one element per thread.
template <typename T>
__global__ void embed_rows_kernel(LayerNormEmbed e, const T* table, T* y, int64_t rows, int64_t n) {
  const int64_t total = rows * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, c = i - r * n;
    int64_t id = 0;
    float v = embed_source_row(e, r, &id) ? to_f(table[id * n + c]) : 0.f;
    if (e.addend) v += to_f(static_cast<const T*>(e.addend)[(r % e.period) * n + c]);
    y[i] = from_f<T>(v);
  }
}

template <typename T>
int launch_embed_rows(const LayerNormEmbed& e, const void* table, void* y, int64_t rows, int64_t n, cudaStream_t s) {
  const int64_t blocks = std::min<int64_t>((rows * n + 255) / 256, 65535);
  embed_rows_kernel<T><<<unsigned(blocks), 256, 0, s>>>(e, static_cast<const T*>(table), static_cast<T*>(y), rows, n);
  return launch_common::launch_status();
}

}  // namespace

int embed_rows(int dt, const LayerNormEmbed& e, const void* table, void* y, int64_t rows, int64_t n, StreamT stream) {
  if (dt < 0 || dt > 2 || !e.ids || e.vocab <= 0 || (e.addend && e.period <= 0)) return -1;
  if (rows <= 0 || n <= 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (dt == 0) return launch_embed_rows<float>(e, table, y, rows, n, s);
  if (dt == 1) return launch_embed_rows<__half>(e, table, y, rows, n, s);
  return launch_embed_rows<__nv_bfloat16>(e, table, y, rows, n, s);
}

}  // namespace kilnrt::cuda::kernels
