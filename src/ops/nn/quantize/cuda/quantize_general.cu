// QuantizeLinear / DequantizeLinear with general parameters (quantize_linear_kernels.h): per tensor, per axis or
// blocked, 8- and 16-bit integers. The arithmetic of the CPU reference (src/ops/nn/quantize/quantize.cc): float32
// division, half-to-even rounding, saturation; dequantization in double.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/nn/quantize/cuda/quantize_linear_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ __forceinline__ int64_t param_offset(const QuantParams& p, int64_t i) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t idx = i % p.dims[d];
    i /= p.dims[d];
    off += (d == p.axis ? idx / p.block : idx) * p.param_strides[d];
  }
  return off;
}

__device__ __forceinline__ double load_int(const void* v, int code, int64_t i) {
  switch (code) {
    case kI8: return static_cast<const int8_t*>(v)[i];
    case kU8: return static_cast<const uint8_t*>(v)[i];
    case kI16: return static_cast<const int16_t*>(v)[i];
    case kU16: return static_cast<const uint16_t*>(v)[i];
    default: return static_cast<const int32_t*>(v)[i];
  }
}

__global__ void quantize_kernel(const float* x, const float* scale, const void* zp, void* y, int code, int64_t n,
                                QuantParams ps, QuantParams pz) {
  double lo = 0, hi = 255;
  if (code == kI8) lo = -128, hi = 127;
  if (code == kI16) lo = -32768, hi = 32767;
  if (code == kU16) lo = 0, hi = 65535;
  KILNRT_GRID_LOOP(i, n) {
    const double z = zp ? load_int(zp, code, param_offset(pz, i)) : 0.0;
    const double q = static_cast<double>(x[i] / scale[param_offset(ps, i)]);
    double v = rint(q) + z;
    v = v < lo ? lo : (v > hi ? hi : v);
    switch (code) {
      case kI8: static_cast<int8_t*>(y)[i] = static_cast<int8_t>(v); break;
      case kU8: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v); break;
      case kI16: static_cast<int16_t*>(y)[i] = static_cast<int16_t>(v); break;
      default: static_cast<uint16_t*>(y)[i] = static_cast<uint16_t>(v); break;
    }
  }
}

__global__ void dequantize_kernel(const void* x, const float* scale, const void* zp, float* y, int code, int64_t n,
                                  QuantParams ps, QuantParams pz) {
  KILNRT_GRID_LOOP(i, n) {
    const double z = zp ? load_int(zp, code, param_offset(pz, i)) : 0.0;
    y[i] = static_cast<float>((load_int(x, code, i) - z) * static_cast<double>(scale[param_offset(ps, i)]));
  }
}

bool bad_params(const QuantParams& p) { return p.rank < 0 || p.rank > kMaxDims || p.block < 1; }

}  // namespace

int quantize_general(const float* x, const float* scale, const void* zp, void* y, int q_code, int64_t n,
                     const QuantParams& ps, const QuantParams& pz, StreamT stream) {
  if (n <= 0) return 0;
  if (bad_params(ps) || bad_params(pz) || !(q_code == kI8 || q_code == kU8 || q_code == kI16 || q_code == kU16))
    return static_cast<int>(cudaErrorInvalidValue);
  quantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, scale, zp, y, q_code, n, ps, pz);
  return launch_status();
}

int dequantize_general(const void* x, const float* scale, const void* zp, float* y, int q_code, int64_t n,
                       const QuantParams& ps, const QuantParams& pz, StreamT stream) {
  if (n <= 0) return 0;
  if (bad_params(ps) || bad_params(pz) ||
      !(q_code == kI8 || q_code == kU8 || q_code == kI16 || q_code == kU16 || q_code == kI32))
    return static_cast<int>(cudaErrorInvalidValue);
  dequantize_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, scale, zp, y, q_code, n, ps, pz);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
