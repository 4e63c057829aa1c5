// QuantizeLinear / DequantizeLinear kernels per tensor or per axis (quantize_linear_kernels.h): one thread per
// element, half-to-even rounding and saturation like the CPU reference (src/ops/nn/quantize/quantize.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/quantize/cuda/quantize_linear_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void quantize_kernel(const float* x, const float* scale, const void* zp, void* y, bool out_signed, int64_t n,
                                int64_t axis_len, int64_t inner) {
  KILNRT_GRID_LOOP(i, n) {
    const int64_t a = axis_len > 1 ? (i / inner) % axis_len : 0;
    const double z =
        zp ? (out_signed ? double(static_cast<const int8_t*>(zp)[a]) : double(static_cast<const uint8_t*>(zp)[a]))
           : 0.0;
    double q = rint(double(x[i] / scale[a])) + z;
    const double lo = out_signed ? -128.0 : 0.0, hi = out_signed ? 127.0 : 255.0;
    q = q < lo ? lo : (q > hi ? hi : q);
    if (out_signed)
      static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
    else
      static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
}

__device__ __forceinline__ double load_q(const void* p, int code, int64_t i) {
  switch (code) {
    case 0: return double(static_cast<const uint8_t*>(p)[i]);
    case 1: return double(static_cast<const int8_t*>(p)[i]);
    case 3: return double(static_cast<const int16_t*>(p)[i]);
    case 4: return double(static_cast<const uint16_t*>(p)[i]);
    default: return double(static_cast<const int32_t*>(p)[i]);
  }
}

__global__ void dequantize_kernel(const void* x, int code, const float* scale, const void* zp, float* y, int64_t n,
                                  int64_t axis_len, int64_t inner) {
  KILNRT_GRID_LOOP(i, n) {
    const int64_t a = axis_len > 1 ? (i / inner) % axis_len : 0;
    const double z = zp ? load_q(zp, code, a) : 0.0;
    y[i] = static_cast<float>((load_q(x, code, i) - z) * double(scale[a]));
  }
}

}  // namespace

int quantize_f32(const float* x, const float* scale, const void* zp, void* y, bool out_signed, int64_t n,
                 int64_t axis_len, int64_t inner, StreamT stream) {
  if (n <= 0) return 0;
  quantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, scale, zp, y, out_signed, n, axis_len, inner);
  return launch_status();
}

int dequantize_f32(const void* x, int x_code, const float* scale, const void* zp, float* y, int64_t n, int64_t axis_len,
                   int64_t inner, StreamT stream) {
  if (n <= 0) return 0;
  dequantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, x_code, scale, zp, y, n, axis_len, inner);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
