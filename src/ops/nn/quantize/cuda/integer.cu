// Kernels of the integer / quantized ops (integer_kernels.h): DynamicQuantizeLinear (one-block min/max, then an
// elementwise pass reading the scale from the device), a direct int32-accumulating batched matmul and a direct
// grouped 1-3-D convolution, both optionally requantized to 8 bits. Rounding is half to even (rint), like the CPU
// reference (src/ops/nn/quantize/quantize.cc).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/quantize/cuda/integer_kernels.h"

namespace kilnrt::cuda::kernels::integer {
namespace {

using namespace launch_common;

__device__ inline int32_t load8(const void* p, bool is_signed, int64_t i) {
  return is_signed ? static_cast<int32_t>(static_cast<const int8_t*>(p)[i])
                   : static_cast<int32_t>(static_cast<const uint8_t*>(p)[i]);
}

__device__ inline int32_t zp_at(const ZeroPoint& z, int64_t i) {
  if (!z.p) return 0;
  return load8(z.p, z.is_signed, z.len > 1 ? i : 0);
}

__device__ inline double clamp8(double v, bool is_signed) {
  const double lo = is_signed ? -128.0 : 0.0, hi = is_signed ? 127.0 : 255.0;
  return v < lo ? lo : (v > hi ? hi : v);
}

// Scale value i: float32, or float16 storage (f16) behind the same pointer.
__device__ inline double scale_at(const float* p, int64_t i, bool f16) {
  return f16 ? static_cast<double>(__half2float(reinterpret_cast<const __half*>(p)[i])) : static_cast<double>(p[i]);
}

// Writes element e of y: the int32 accumulator, or its requantization (channel: index into b_scale).
__device__ inline void store_acc(void* y, int64_t e, int64_t acc, const Requant& rq, int64_t channel) {
  if (!rq.enabled) {
    static_cast<int32_t*>(y)[e] = static_cast<int32_t>(acc);
    return;
  }
  const double bs = scale_at(rq.b_scale, rq.b_scale_len > 1 ? channel : 0, rq.b_f16);
  const double v =
      static_cast<double>(acc) * scale_at(rq.a_scale, 0, rq.a_f16) * bs / scale_at(rq.y_scale, 0, rq.y_f16);
  const double q =
      clamp8(rint(static_cast<double>(static_cast<float>(v))) + load8(rq.y_zp, rq.y_signed, 0), rq.y_signed);
  if (rq.y_signed)
    static_cast<int8_t*>(y)[e] = static_cast<int8_t>(q);
  else
    static_cast<uint8_t*>(y)[e] = static_cast<uint8_t>(q);
}

__global__ void range_kernel(const float* x, int64_t n, float* scale, uint8_t* zp) {
  __shared__ float lo_sh[kThreads], hi_sh[kThreads];
  float lo = 0.f, hi = 0.f;  // the range always includes 0
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  lo_sh[threadIdx.x] = lo;
  hi_sh[threadIdx.x] = hi;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) {
      lo_sh[threadIdx.x] = fminf(lo_sh[threadIdx.x], lo_sh[threadIdx.x + w]);
      hi_sh[threadIdx.x] = fmaxf(hi_sh[threadIdx.x], hi_sh[threadIdx.x + w]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    // float32 like the CPU reference: (hi - lo) in double then rounded to float, / 255 in float.
    const float s = static_cast<float>(static_cast<double>(hi_sh[0]) - static_cast<double>(lo_sh[0])) / 255.f;
    *scale = s;
    *zp = s != 0.f ? static_cast<uint8_t>(clamp8(rint(static_cast<double>(-lo_sh[0] / s)), false)) : uint8_t(0);
  }
}

__global__ void dyn_quantize_kernel(const float* x, uint8_t* y, const float* scale, const uint8_t* zp, int64_t n) {
  const float s = *scale;
  const double z = *zp;
  KILNRT_GRID_LOOP(i, n) {
    y[i] = s != 0.f ? static_cast<uint8_t>(clamp8(rint(static_cast<double>(x[i] / s)) + z, false))
                    : static_cast<uint8_t>(z);
  }
}

__global__ void matmul_integer_kernel(const void* a, bool a_signed, ZeroPoint azp, const void* b, bool b_signed,
                                      ZeroPoint bzp, void* y, MatBatch batch, int64_t nb, int64_t M, int64_t K,
                                      int64_t N, Requant rq) {
  const int64_t total = nb * M * N;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t col = e % N;
    const int64_t row = (e / N) % M;
    int64_t bi = e / (M * N);
    int64_t oa = 0, ob = 0;
    for (int d = batch.rank - 1; d >= 0; --d) {
      const int64_t c = bi % batch.d[d];
      bi /= batch.d[d];
      oa += c * batch.sa[d];
      ob += c * batch.sb[d];
    }
    const int64_t abase = oa * M * K + row * K, bbase = ob * K * N + col;
    const int32_t za = zp_at(azp, row), zb = zp_at(bzp, col);
    int64_t acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += static_cast<int64_t>(load8(a, a_signed, abase + k) - za) * (load8(b, b_signed, bbase + k * N) - zb);
    store_acc(y, e, acc, rq, col);
  }
}

__global__ void conv_integer_kernel(const void* x, bool x_signed, ZeroPoint xzp, const void* w, bool w_signed,
                                    ZeroPoint wzp, const int32_t* bias, void* y, ConvGeom g, Requant rq) {
  const int64_t osz = g.out[0] * g.out[1] * g.out[2];
  const int64_t total = g.n * g.m * osz;
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  const int64_t ksz = g.k[0] * g.k[1] * g.k[2];
  const int64_t isz = g.in[0] * g.in[1] * g.in[2];
  const int32_t zx = zp_at(xzp, 0);
  KILNRT_GRID_LOOP(e, total) {
    const int64_t o2 = e % g.out[2];
    const int64_t o1 = (e / g.out[2]) % g.out[1];
    const int64_t o0 = (e / (g.out[2] * g.out[1])) % g.out[0];
    const int64_t m = (e / osz) % g.m;
    const int64_t n = e / (osz * g.m);
    const int64_t gi = m / mg;
    const int32_t zw = zp_at(wzp, m);
    int64_t acc = bias ? bias[m] : 0;
    for (int64_t c = 0; c < cg; ++c) {
      const int64_t xbase = (n * g.c + gi * cg + c) * isz;
      const int64_t wbase = (m * cg + c) * ksz;
      for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
        const int64_t i0 = o0 * g.s[0] - g.pad[0] + k0 * g.d[0];
        if (i0 < 0 || i0 >= g.in[0]) continue;
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
          const int64_t i1 = o1 * g.s[1] - g.pad[1] + k1 * g.d[1];
          if (i1 < 0 || i1 >= g.in[1]) continue;
          for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
            const int64_t i2 = o2 * g.s[2] - g.pad[2] + k2 * g.d[2];
            if (i2 < 0 || i2 >= g.in[2]) continue;
            const int32_t xv = load8(x, x_signed, xbase + (i0 * g.in[1] + i1) * g.in[2] + i2) - zx;
            const int32_t wv = load8(w, w_signed, wbase + (k0 * g.k[1] + k1) * g.k[2] + k2) - zw;
            acc += static_cast<int64_t>(xv) * wv;
          }
        }
      }
    }
    store_acc(y, e, acc, rq, m);
  }
}

}  // namespace

int dynamic_quantize_f32(const float* x, uint8_t* y, float* scale, uint8_t* zp, int64_t n, StreamT stream) {
  range_kernel<<<1, kThreads, 0, stream>>>(x, n, scale, zp);
  const int st = launch_status();
  if (st != 0 || n <= 0) return st;
  dyn_quantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, scale, zp, n);
  return launch_status();
}

int matmul_integer(const void* a, bool a_signed, ZeroPoint azp, const void* b, bool b_signed, ZeroPoint bzp, void* y,
                   const MatBatch& batch, int64_t m, int64_t k, int64_t n, const Requant& rq, StreamT stream) {
  int64_t nb = 1;
  for (int d = 0; d < batch.rank; ++d) nb *= batch.d[d];
  const int64_t total = nb * m * n;
  if (total <= 0) return 0;
  matmul_integer_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, a_signed, azp, b, b_signed, bzp, y, batch, nb, m,
                                                                    k, n, rq);
  return launch_status();
}

int conv_integer(const void* x, bool x_signed, ZeroPoint xzp, const void* w, bool w_signed, ZeroPoint wzp,
                 const int32_t* bias, void* y, const ConvGeom& g, const Requant& rq, StreamT stream) {
  const int64_t total = g.n * g.m * g.out[0] * g.out[1] * g.out[2];
  if (total <= 0) return 0;
  conv_integer_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, x_signed, xzp, w, w_signed, wzp, bias, y, g, rq);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::integer
