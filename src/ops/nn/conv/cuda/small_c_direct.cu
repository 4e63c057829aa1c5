// Direct tensor-core convolution for few input channels (the RGB stems of CNNs; conv_small_c.h path
// "direct-mma"): an implicit GEMM with the im2col built in shared memory, never in global memory, and the epilogue
// (bias, activation) applied before the one store of the output.
//
// A block owns 64 output pixels (flattened over image, row, column) and all K output channels: it gathers the
// pixels' receptive fields into A [64][kc16] (16-bit, zeros for padding and j >= C*KH*KW), the weights into
// B [K][kc16], and four warps each multiply 16 rows of A by B with WMMA 16x16x16 (float32 accumulation). The float32
// results go through shared memory (reusing A's space) to the epilogue, which writes NHWC rows (K contiguous
// channels per pixel) or NCHW planes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "cuda/kernels/conv_activation.cuh"
#include "ops/nn/conv/cuda/conv_small_c_kernels.h"
#include "cuda/kernels/storage16.cuh"

namespace kilnrt::cuda::kernels {
namespace {

constexpr int kTileM = 64;  // output pixels per block
constexpr int kWarps = 4;   // 16 pixels each
constexpr int kPadA = 8;    // row padding of A / B in shared memory (16 bytes: keeps WMMA rows 32-byte aligned)

struct DirectGeo {
  int64_t sn, sc, sh, sw;  // input element strides (NCHW or NHWC)
  int c, h, w, k, oh, ow, kh, kw, strh, strw, ph, pw, kc, kc16;
  int64_t pixels;  // n * oh * ow
  int act;
  float a, b;
  bool y_nhwc;
};

using storage16::from_f;
using storage16::to_f;

template <class T, int KT>
__global__ void __launch_bounds__(kWarps * 32)
    small_c_direct_kernel(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                          T* __restrict__ y, DirectGeo g) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lda = g.kc16 + kPadA;
  const int K = KT * 16;
  T* As = reinterpret_cast<T*>(smem);                   // [kTileM][lda]
  T* Bs = As + kTileM * lda;                            // [K][lda]
  int* koff = reinterpret_cast<int*>(Bs + K * lda);     // [kc16]: c*sc + r*sh + s*sw (elements)
  short* kr = reinterpret_cast<short*>(koff + g.kc16);  // [kc16]: filter row r, -1 beyond kc
  short* ks = kr + g.kc16;                              // [kc16]: filter column s
  __shared__ int64_t pbase[kTileM];                     // image + top-left offset of each pixel
  __shared__ int pih[kTileM], piw[kTileM];              // top-left input row / column (may be < 0)
  const int tid = threadIdx.x;
  const int64_t p0 = int64_t(blockIdx.x) * kTileM;
  const int ohw = g.oh * g.ow;
  for (int j = tid; j < g.kc16; j += blockDim.x) {
    if (j < g.kc) {
      const int rs = g.kh * g.kw;
      const int c = j / rs, r = (j % rs) / g.kw, s = j % g.kw;
      koff[j] = int(c * g.sc + r * g.sh + s * g.sw);
      kr[j] = short(r);
      ks[j] = short(s);
    } else {
      koff[j] = 0;
      kr[j] = -1;
      ks[j] = 0;
    }
  }
  if (tid < kTileM) {
    const int64_t p = p0 + tid;
    if (p < g.pixels) {
      const int64_t n = p / ohw;
      const int rem = int(p - n * ohw);
      const int oy = rem / g.ow, ox = rem % g.ow;
      pih[tid] = oy * g.strh - g.ph;
      piw[tid] = ox * g.strw - g.pw;
      pbase[tid] = n * g.sn + int64_t(pih[tid]) * g.sh + int64_t(piw[tid]) * g.sw;
    } else {
      pih[tid] = -(1 << 20);  // every tap out of bounds: a zero row
      piw[tid] = 0;
      pbase[tid] = 0;
    }
  }
  // Weights [K][kc16] (already zero-padded at load) -> Bs, 16 bytes at a time.
  const int wvec = g.kc16 / 8;
  for (int i = tid; i < K * wvec; i += blockDim.x) {
    const int o = i / wvec, v = i % wvec;
    *reinterpret_cast<uint4*>(Bs + o * lda + v * 8) = *reinterpret_cast<const uint4*>(wt + int64_t(o) * g.kc16 + v * 8);
  }
  __syncthreads();
  // Receptive fields -> As (consecutive threads: consecutive taps of one pixel).
  const T zero = from_f<T>(0.f);
  for (int i = tid; i < kTileM * g.kc16; i += blockDim.x) {
    const int m = i / g.kc16, j = i - m * g.kc16;
    T v = zero;
    const int r = kr[j];
    if (r >= 0) {
      const int iy = pih[m] + r, ix = piw[m] + ks[j];
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) v = x[pbase[m] + koff[j]];
    }
    As[m * lda + j] = v;
  }
  __syncthreads();
  const int warp = tid / 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[KT];
#pragma unroll
  for (int t = 0; t < KT; ++t) wmma::fill_fragment(acc[t], 0.f);
  for (int kk = 0; kk < g.kc16; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, As + warp * 16 * lda + kk, lda);
#pragma unroll
    for (int t = 0; t < KT; ++t) {
      // B (k x n) col-major: element (k, n) at Bs[n * lda + k].
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, Bs + t * 16 * lda + kk, lda);
      wmma::mma_sync(acc[t], fa, fb, acc[t]);
    }
  }
  __syncthreads();  // A is read by every warp: reuse its space for the float32 results only after all are done
  const int ldc = K + 4;
  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int t = 0; t < KT; ++t) wmma::store_matrix_sync(Cs + warp * 16 * ldc + t * 16, acc[t], ldc, wmma::mem_row_major);
  __syncthreads();
  if (g.y_nhwc) {
    for (int i = tid; i < kTileM * K; i += blockDim.x) {
      const int m = i / K, o = i - m * K;
      const int64_t p = p0 + m;
      if (p >= g.pixels) continue;
      float v = Cs[m * ldc + o] + (bias ? to_f(bias[o]) : 0.f);
      y[p * K + o] = from_f<T>(conv_act::activate(g.act, v, g.a, g.b));
    }
  } else {
    for (int i = tid; i < kTileM * K; i += blockDim.x) {
      const int o = i / kTileM, m = i - o * kTileM;
      const int64_t p = p0 + m;
      if (p >= g.pixels) continue;
      const int64_t n = p / ohw;
      float v = Cs[m * ldc + o] + (bias ? to_f(bias[o]) : 0.f);
      y[(n * K + o) * ohw + (p - n * ohw)] = from_f<T>(conv_act::activate(g.act, v, g.a, g.b));
    }
  }
}

size_t direct_smem_bytes(int k, int kc16) {
  const size_t lda = size_t(kc16) + kPadA;
  const size_t ab = (size_t(kTileM) + size_t(k)) * lda * 2 + size_t(kc16) * (4 + 2 + 2);
  const size_t c = size_t(kTileM) * size_t(k + 4) * 4;  // the float32 results, over A / B once they are read
  return (ab > c ? ab : c) + 16;
}

template <class T, int KT>
int launch_direct(const void* x, const void* w, const void* bias, void* y, const DirectGeo& g, StreamT stream) {
  const size_t smem = direct_smem_bytes(KT * 16, g.kc16);
  const unsigned blocks = unsigned((g.pixels + kTileM - 1) / kTileM);
  small_c_direct_kernel<T, KT><<<blocks, kWarps * 32, smem, reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<T*>(y), g);
  return static_cast<int>(cudaGetLastError());
}

template <class T>
int dispatch_k(const void* x, const void* w, const void* bias, void* y, const DirectGeo& g, StreamT stream) {
  switch (g.k / 16) {
    case 1: return launch_direct<T, 1>(x, w, bias, y, g, stream);
    case 2: return launch_direct<T, 2>(x, w, bias, y, g, stream);
    case 3: return launch_direct<T, 3>(x, w, bias, y, g, stream);
    case 4: return launch_direct<T, 4>(x, w, bias, y, g, stream);
    case 6: return launch_direct<T, 6>(x, w, bias, y, g, stream);
    case 8: return launch_direct<T, 8>(x, w, bias, y, g, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

bool small_c_direct_applies(const Conv2d& p, int64_t kc16) {
  const int64_t kt = p.k / 16;
  if (p.k % 16 != 0 || !(kt == 1 || kt == 2 || kt == 3 || kt == 4 || kt == 6 || kt == 8)) return false;
  if (kc16 % 16 != 0 || kc16 < p.c * p.kh * p.kw || kc16 > 512 || p.groups != 1 || p.dh != 1 || p.dw != 1) return false;
  if (p.c * p.h * p.w > (int64_t(1) << 30) || p.n * p.oh * p.ow >= (int64_t(1) << 40)) return false;
  return direct_smem_bytes(int(p.k), int(kc16)) <= 46 * 1024;  // + ~1 KB of static tables: under 48 KB
}

int small_c_direct16(bool bf16, const void* x, bool x_nhwc, const void* w, int64_t kc16, const void* bias, void* y,
                     bool y_nhwc, const Conv2d& p, int act, float a, float b, StreamT stream) {
  if (!small_c_direct_applies(p, kc16)) return static_cast<int>(cudaErrorInvalidValue);
  if (p.n == 0 || p.oh == 0 || p.ow == 0) return 0;
  DirectGeo g{};
  set_shared_conv_fields(g, p, x_nhwc);
  g.k = int(p.k);
  g.pw = p.pw;
  g.kc = int(p.c * p.kh * p.kw);
  g.kc16 = int(kc16);
  g.pixels = p.n * p.oh * p.ow;
  g.act = act;
  g.a = a;
  g.b = b;
  g.y_nhwc = y_nhwc;
  return bf16 ? dispatch_k<__nv_bfloat16>(x, w, bias, y, g, stream) : dispatch_k<__half>(x, w, bias, y, g, stream);
}

}  // namespace kilnrt::cuda::kernels
