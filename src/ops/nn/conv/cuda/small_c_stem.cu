// The stem kernel of the small-input-channel convolutions (conv_small_c.h path "stem-mma"): an
// implicit GEMM on mma.sync tensor cores that reads each input row into shared memory once and builds its A fragments
// from there, for even horizontal strides (the 7x7/2 and 3x3/2 RGB stems of resnet / efficientnet / mobilenet).
//
// GEMM: rows = output pixels, columns = the K filters, reduction j = ((c * KH + ky) * kxp + kx'), kx' = kx + lead
// (kxp = 4 or 8 taps per filter row, `lead` = pw % 2 zero taps in front of the window). With an even stride sw the
// first tap of every pixel then sits at an even column of the shared-memory row, so each A register (two adjacent
// taps) is one aligned 32-bit shared load, and one m16n8k16 step covers 16 / kxp whole filter rows.
//
// A block owns tiles of 32 * warps consecutive output pixels of one image (persistent: tile += gridDim.x). Per tile
// it copies the input rows the tile's pixels read (C planes, zero padding included, 16-byte cp.async when the rows
// allow) into one of two buffers while the previous tile computes. The weights [K][kpad] sit in shared memory for the
// whole kernel. Each warp computes 2 m-tiles x K with float32 accumulators, adds the bias, applies the activation and
// writes 16 NHWC pixels as one contiguous run of 16-byte stores (staged through shared memory), or NCHW planes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "cuda/kernels/mma_ptx.cuh"
#include "cuda/kernels/conv_activation.cuh"
#include "ops/nn/conv/cuda/conv_small_c_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

namespace ptx = attention_mma_detail;

constexpr int kMt = 2;        // m-tiles of 16 pixels per warp
constexpr int kMaxWarps = 8;  // per block
constexpr size_t kMaxSmem = 200 * 1024;

struct StemGeo {
  int64_t sn, sc, sh, sw;  // input element strides (NCHW or NHWC)
  int c, h, w, oh, ow, kh, kw, strh, strw, ph, lead;
  int kpad, rows16;                          // reduction length (a multiple of 16); (c, ky) rows it holds (kpad / kxp)
  int rowlen, rows_max, plane, shift, base;  // shared input rows: length, rows per plane, plane size, x = 0 at
                                             // column `shift`, pixel ox's first tap at column ox * strw + base
  int tile_px, tiles_per_image, tiles;
  int act;
  float a, b;
  int vec;  // row copies (load_patch): 1 NCHW 16-byte, 2 NHWC 16-byte, 0 element by element
  bool y_nhwc;
};

// Copies the input rows of tile `tile` into dst ([c][rows_max][rowlen]; the columns outside the image were zeroed
// once at the start, rows outside it are written as zeros here). Three ways, one integer division per 8 elements:
//  - NCHW, W % 8 == 0, 16-byte aligned rows: 16-byte cp.async per 8 columns of one (c, row);
//  - NHWC with W * C % 8 == 0, aligned: 16-byte loads of the interleaved row, split into the C planes;
//  - otherwise element by element.
template <class T>
__device__ __forceinline__ void load_patch(const T* __restrict__ x, T* dst, const StemGeo& g, int tile) {
  const int img = tile / g.tiles_per_image;
  const int ohw = g.oh * g.ow;
  const int tp0 = (tile - img * g.tiles_per_image) * g.tile_px;
  const int last = min(tp0 + g.tile_px, ohw) - 1;
  const int oy_first = tp0 / g.ow, oy_last = last / g.ow;
  const int iy0 = oy_first * g.strh - g.ph;
  const int nrows = (oy_last - oy_first) * g.strh + g.kh;
  const T* xi = x + int64_t(img) * g.sn;
  T* drow0 = dst + g.shift;  // column of x = 0
  if (g.vec == 1) {
    const int chunks = g.w / 8;
    const int total = g.c * nrows * chunks;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int cr = i / chunks, j = i - cr * chunks;
      const int c = cr / nrows, r = cr - c * nrows;  // (c, r): one division per 8 columns
      const int iy = iy0 + r;
      const bool ok = iy >= 0 && iy < g.h;
      const T* src = ok ? xi + int64_t(c) * g.sc + int64_t(iy) * g.sh + j * 8 : x;
      ptx::cp_async16(drow0 + c * g.plane + r * g.rowlen + j * 8, src, ok);
    }
  } else if (g.vec == 2) {
    const int chunks = g.w * g.c / 8;
    const int total = nrows * chunks;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int r = i / chunks, j = i - r * chunks;
      const int iy = iy0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (iy >= 0 && iy < g.h) v = *reinterpret_cast<const uint4*>(xi + int64_t(iy) * g.sh + j * 8);
      const T* e = reinterpret_cast<const T*>(&v);
      int ix = (j * 8) / g.c, c = j * 8 - ix * g.c;
      T* d = drow0 + r * g.rowlen;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        d[c * g.plane + ix] = e[k];
        if (++c == g.c) {
          c = 0;
          ++ix;
        }
      }
    }
  } else {
    const int total = g.c * nrows * g.w;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int cr = i / g.w, ix = i - cr * g.w;
      const int c = cr / nrows, r = cr - c * nrows;
      const int iy = iy0 + r;
      T v = T(0.f);
      if (iy >= 0 && iy < g.h) v = xi[int64_t(c) * g.sc + int64_t(iy) * g.sh + int64_t(ix) * g.sw];
      drow0[c * g.plane + r * g.rowlen + ix] = v;
    }
  }
}

// act(v) with the activation code a constant (ACT >= 0) or g.act (ACT < 0).
template <int ACT>
__device__ __forceinline__ float act_of(float v, const StemGeo& g) {
  return conv_act::activate(ACT >= 0 ? ACT : g.act, v, g.a, g.b);
}

// Bias + activation of one m-tile's accumulators (16 pixels from pb x K) and the store: NHWC as 16 contiguous
// pixels through the warp's staging rows (16-byte stores), NCHW element by element.
template <class T, int NT, int ACT>
__device__ __forceinline__ void store_mtile(const float (&acc)[NT][4], const float* biasf, T* st, T* __restrict__ y,
                                            const StemGeo& g, int img, int pb, int lane) {
  using B16 = ptx::Bits16<T>;
  constexpr int K = NT * 8, LDS = K + 8;
  const int gq = lane >> 2, tq = lane & 3;
  const int ohw = g.oh * g.ow;
  if (g.y_nhwc) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int o = j * 8 + 2 * tq;
      const float b0 = biasf[o], b1 = biasf[o + 1];
      *reinterpret_cast<uint32_t*>(st + gq * LDS + o) =
          B16::pack(act_of<ACT>(acc[j][0] + b0, g), act_of<ACT>(acc[j][1] + b1, g));
      *reinterpret_cast<uint32_t*>(st + (gq + 8) * LDS + o) =
          B16::pack(act_of<ACT>(acc[j][2] + b0, g), act_of<ACT>(acc[j][3] + b1, g));
    }
    __syncwarp();
    const int rows = min(16, ohw - pb);
    T* dst = y + (int64_t(img) * ohw + pb) * K;
    constexpr int CH = K / 8;  // 16-byte chunks per pixel
#pragma unroll
    for (int i = lane; i < 16 * CH; i += 32) {
      const int r = i / CH, cc = i - r * CH;
      if (r < rows)
        *reinterpret_cast<uint4*>(dst + r * K + cc * 8) = *reinterpret_cast<const uint4*>(st + r * LDS + cc * 8);
    }
    __syncwarp();
  } else {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int p = pb + gq + 8 * hr;
      if (p >= ohw) continue;
      T* dst = y + int64_t(img) * K * ohw + p;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int o = j * 8 + 2 * tq;
        dst[int64_t(o) * ohw] = T(act_of<ACT>(acc[j][2 * hr] + biasf[o], g));
        dst[int64_t(o + 1) * ohw] = T(act_of<ACT>(acc[j][2 * hr + 1] + biasf[o + 1], g));
      }
    }
  }
}

template <class T, int NT, int KXP>
__global__ void __launch_bounds__(kMaxWarps * 32, 2)
    small_c_stem_kernel(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                        T* __restrict__ y, StemGeo g) {
  using B16 = ptx::Bits16<T>;
  constexpr int K = NT * 8;
  constexpr int RP = 16 / KXP;  // filter rows per k-step
  constexpr int LDS = K + 8;    // staging row stride (store_mtile)
  extern __shared__ __align__(128) unsigned char smem[];
  const int ldb = g.kpad + 8;  // the 16-byte pad keeps ldmatrix conflict-free
  const int warps = blockDim.x / 32;
  T* Bs = reinterpret_cast<T*>(smem);  // [K][ldb]
  T* patch0 = Bs + K * ldb;            // 2 x [c][rows_max][rowlen]
  const int patch_elems = g.c * g.plane;
  T* stage_all = patch0 + 2 * patch_elems;                                // warps x [16][LDS]
  float* biasf = reinterpret_cast<float*>(stage_all + warps * 16 * LDS);  // [K]
  int* rowoff = reinterpret_cast<int*>(biasf + K);  // [rows16]: c * plane + ky * rowlen, -1 past C*KH
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gq = lane >> 2, tq = lane & 3;

  const int wchunks = g.kpad / 8;
  for (int i = tid; i < K * wchunks; i += blockDim.x) {
    const int o = i / wchunks, v = i - o * wchunks;
    ptx::cp_async16(Bs + o * ldb + v * 8, wt + int64_t(o) * g.kpad + v * 8, true);
  }
  for (int i = tid; i < K; i += blockDim.x) biasf[i] = bias ? B16::to_f(bias[i]) : 0.f;
  for (int q = tid; q < g.rows16; q += blockDim.x) {
    const int c = q / g.kh, ky = q - c * g.kh;
    rowoff[q] = c < g.c ? c * g.plane + ky * g.rowlen : -1;
  }
  {  // both patch buffers: zeros, so that the columns outside the image (never written again) read as padding
    uint4* z = reinterpret_cast<uint4*>(patch0);
    const int n16 = 2 * patch_elems / 8;
    for (int i = tid; i < n16; i += blockDim.x) z[i] = make_uint4(0, 0, 0, 0);
  }
  __syncthreads();
  int tile = blockIdx.x;
  if (tile < g.tiles) load_patch(x, patch0, g, tile);
  ptx::cp_async_commit();

  // This thread's A columns: taps kx' = kx0, kx0 + 1 of filter rows q0 (k 2t, 2t+1) and q1 (k 2t+8, 2t+9) of each
  // k-step. Taps outside the window (the lead slot, the tail) have zero weights; masking them keeps a non-finite
  // input value next to the window out of the sum.
  const int kx0 = (2 * tq) % KXP;
  const int q0 = (2 * tq) / KXP, q1 = (2 * tq + 8) / KXP;
  const bool lo_ok = kx0 - g.lead >= 0 && kx0 - g.lead < g.kw;
  const bool hi_ok = kx0 + 1 - g.lead >= 0 && kx0 + 1 - g.lead < g.kw;
  const uint32_t xmask = (lo_ok ? 0xffffu : 0u) | (hi_ok ? 0xffff0000u : 0u);
  const int ohw = g.oh * g.ow;
  const int ksteps = g.kpad / 16;

  int buf = 0;
  for (; tile < g.tiles; tile += gridDim.x) {
    const int next = tile + gridDim.x;
    if (next < g.tiles) load_patch(x, patch0 + (buf ^ 1) * patch_elems, g, next);
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();
    __syncthreads();
    const T* patch = patch0 + buf * patch_elems;
    const int img = tile / g.tiles_per_image;
    const int tp0 = (tile - img * g.tiles_per_image) * g.tile_px;
    const int oy_first = tp0 / g.ow;
    int poff[kMt][2];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int p = tp0 + (warp * kMt + mt) * 16 + gq + 8 * hr;
        int off = 0;
        if (p < ohw) {
          const int oy = p / g.ow, ox = p - oy * g.ow;
          off = (oy - oy_first) * g.strh * g.rowlen + ox * g.strw + g.base + kx0;
        }
        poff[mt][hr] = off;
      }
    float acc[kMt][NT][4];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][j][e] = 0.f;
    const int l8 = lane & 7, mi = lane >> 3;
    const T* bbase = Bs + ((mi >> 1) * 8 + l8) * ldb + (mi & 1) * 8;
    for (int s = 0; s < ksteps; ++s) {
      const int r0 = rowoff[s * RP + q0], r1 = rowoff[s * RP + q1];
      uint32_t a[kMt][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        a[mt][0] = r0 >= 0 ? *reinterpret_cast<const uint32_t*>(patch + r0 + poff[mt][0]) & xmask : 0u;
        a[mt][1] = r0 >= 0 ? *reinterpret_cast<const uint32_t*>(patch + r0 + poff[mt][1]) & xmask : 0u;
        a[mt][2] = r1 >= 0 ? *reinterpret_cast<const uint32_t*>(patch + r1 + poff[mt][0]) & xmask : 0u;
        a[mt][3] = r1 >= 0 ? *reinterpret_cast<const uint32_t*>(patch + r1 + poff[mt][1]) & xmask : 0u;
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        uint32_t b[4];  // n-tile j: b[0], b[1]; n-tile j + 1: b[2], b[3]
        ptx::ldsm_x4(b, bbase + j * 8 * ldb + s * 16);
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          B16::mma(acc[mt][j], a[mt], b[0], b[1]);
          B16::mma(acc[mt][j + 1], a[mt], b[2], b[3]);
        }
      }
    }
    // Epilogue: bias, activation (the common ones with the code a constant), store.
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
      const int pb = tp0 + (warp * kMt + mt) * 16;  // first pixel of this m-tile
      T* st = stage_all + warp * 16 * LDS;
      switch (g.act) {
        case 0: store_mtile<T, NT, 0>(acc[mt], biasf, st, y, g, img, pb, lane); break;
        case 1: store_mtile<T, NT, 1>(acc[mt], biasf, st, y, g, img, pb, lane); break;
        case 5: store_mtile<T, NT, 5>(acc[mt], biasf, st, y, g, img, pb, lane); break;
        case 7: store_mtile<T, NT, 7>(acc[mt], biasf, st, y, g, img, pb, lane); break;
        default: store_mtile<T, NT, -1>(acc[mt], biasf, st, y, g, img, pb, lane); break;
      }
    }
    __syncthreads();  // every warp is done with `patch` before the next iteration refills it
    buf ^= 1;
  }
  ptx::cp_async_wait<0>();
}

int round_up(int64_t v, int64_t m) { return int((v + m - 1) / m * m); }

// Tile geometry and shared memory of a launch with `warps` warps per block; false when it does not fit.
bool plan_geo(const Conv2d& p, const SmallCStemLayout& l, int warps, StemGeo* g, size_t* smem) {
  g->tile_px = warps * kMt * 16;
  g->shift = round_up(p.pw + l.lead, 8);
  g->base = g->shift - int(p.pw) - l.lead;
  const int64_t need = std::max<int64_t>(int64_t(p.sw) * (p.ow - 1) + g->base + l.kxp, g->shift + p.w);
  if (need > (int64_t(1) << 20)) return false;
  g->rowlen = round_up(need, 8);
  const int64_t rows_out = std::min<int64_t>(p.oh, (g->tile_px + p.ow - 2) / p.ow + 1);
  g->rows_max = int((rows_out - 1) * p.sh + p.kh);
  const int64_t plane = int64_t(g->rows_max) * g->rowlen;
  if (plane * p.c > (int64_t(1) << 24)) return false;
  g->plane = int(plane);
  const int64_t k = p.k;
  const size_t bytes = size_t(k) * size_t(l.kpad + 8) * 2 + 2 * size_t(p.c) * size_t(plane) * 2 +
                       size_t(warps) * 16 * size_t(k + 8) * 2 + size_t(k) * 4 + size_t(l.kpad / l.kxp) * 4;
  *smem = bytes;
  return bytes <= kMaxSmem;
}

using launch_common::sm_count;

template <class T, int NT, int KXP>
int launch_stem(const void* x, const void* w, const void* bias, void* y, StemGeo g, int warps, size_t smem,
                int max_blocks, StreamT stream) {
  auto kernel = small_c_stem_kernel<T, NT, KXP>;
  if (smem > 48 * 1024) {
    const cudaError_t st = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (st != cudaSuccess) return static_cast<int>(st);
  }
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem) != cudaSuccess || per_sm < 1)
    per_sm = 1;
  int64_t grid = std::min<int64_t>(g.tiles, int64_t(per_sm) * sm_count());
  if (max_blocks > 0) grid = std::min<int64_t>(grid, max_blocks);
  kernel<<<unsigned(grid), warps * 32, smem, reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<T*>(y), g);
  return launch_common::launch_status();
}

template <class T, int KXP>
int dispatch_nt(int64_t k, const void* x, const void* w, const void* bias, void* y, const StemGeo& g, int warps,
                size_t smem, int mb, StreamT stream) {
  switch (k) {
    case 16: return launch_stem<T, 2, KXP>(x, w, bias, y, g, warps, smem, mb, stream);
    case 32: return launch_stem<T, 4, KXP>(x, w, bias, y, g, warps, smem, mb, stream);
    case 48: return launch_stem<T, 6, KXP>(x, w, bias, y, g, warps, smem, mb, stream);
    case 64: return launch_stem<T, 8, KXP>(x, w, bias, y, g, warps, smem, mb, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

bool small_c_stem_layout(int64_t c, int kh, int kw, int sw, int pw, SmallCStemLayout* out) {
  if (c < 1 || c > 4 || kh < 1 || kw < 1 || sw < 2 || sw % 2 != 0 || pw < 0) return false;
  const int lead = pw % 2;
  const int kxp = kw + lead <= 4 ? 4 : kw + lead <= 8 ? 8 : 0;
  if (kxp == 0) return false;
  const int64_t kpad = (c * kh * kxp + 15) / 16 * 16;
  if (kpad > 512) return false;
  out->kxp = kxp;
  out->lead = lead;
  out->kpad = kpad;
  return true;
}

bool small_c_stem_applies(const Conv2d& p, const SmallCStemLayout& l) {
  SmallCStemLayout want;
  if (!small_c_stem_layout(p.c, p.kh, p.kw, p.sw, int(p.pw), &want) || want.kxp != l.kxp || want.lead != l.lead ||
      want.kpad != l.kpad)
    return false;
  if (!(p.k == 16 || p.k == 32 || p.k == 48 || p.k == 64) || p.groups != 1 || p.dh != 1 || p.dw != 1) return false;
  if (p.sh < 1 || p.ph < 0 || p.oh < 1 || p.ow < 1 || p.oh * p.ow >= (int64_t(1) << 30)) return false;
  if (p.c * p.h * p.w >= (int64_t(1) << 31)) return false;
  StemGeo g{};
  size_t smem = 0;
  return plan_geo(p, l, 2, &g, &smem);
}

int small_c_stem16(bool bf16, const void* x, bool x_nhwc, const void* w, const SmallCStemLayout& l, const void* bias,
                   void* y, bool y_nhwc, const Conv2d& p, int act, float a, float b, int max_blocks, StreamT stream) {
  if (!small_c_stem_applies(p, l) || (reinterpret_cast<uintptr_t>(w) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(y) & 15) != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  if (p.n == 0) return 0;
  StemGeo g{};
  set_shared_conv_fields(g, p, x_nhwc);
  g.lead = l.lead;
  g.kpad = int(l.kpad);
  g.rows16 = int(l.kpad / l.kxp);
  g.act = act;
  g.a = a;
  g.b = b;
  g.y_nhwc = y_nhwc;
  // Tiles: 8 warps (256 pixels) per block when that still gives two blocks per SM, else smaller blocks (batch 1).
  const int64_t ohw = p.oh * p.ow;
  const int sms = sm_count();
  int warps = 2;
  for (int cand : {8, 4}) {
    const int64_t tiles = p.n * ((ohw + cand * kMt * 16 - 1) / (cand * kMt * 16));
    if (tiles >= 2 * sms) {
      warps = cand;
      break;
    }
  }
  size_t smem = 0;
  if (!plan_geo(p, l, warps, &g, &smem)) {
    warps = 2;
    if (!plan_geo(p, l, warps, &g, &smem)) return static_cast<int>(cudaErrorInvalidValue);
  }
  g.tiles_per_image = int((ohw + g.tile_px - 1) / g.tile_px);
  const int64_t tiles = p.n * g.tiles_per_image;
  if (tiles >= (int64_t(1) << 31)) return static_cast<int>(cudaErrorInvalidValue);
  g.tiles = int(tiles);
  const bool x16 = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  g.vec = !x_nhwc && p.w % 8 == 0 && x16 ? 1 : x_nhwc && (p.w * p.c) % 8 == 0 && x16 ? 2 : 0;
  if (l.kxp == 4)
    return bf16 ? dispatch_nt<__nv_bfloat16, 4>(p.k, x, w, bias, y, g, warps, smem, max_blocks, stream)
                : dispatch_nt<__half, 4>(p.k, x, w, bias, y, g, warps, smem, max_blocks, stream);
  return bf16 ? dispatch_nt<__nv_bfloat16, 8>(p.k, x, w, bias, y, g, warps, smem, max_blocks, stream)
              : dispatch_nt<__half, 8>(p.k, x, w, bias, y, g, warps, smem, max_blocks, stream);
}

}  // namespace kilnrt::cuda::kernels
