// Host entry points of the QuantizeLinear / DequantizeLinear kernels: per tensor or per axis with 8-bit outputs
// (quantize_linear.cu), and general parameters: blocked, 16-bit, output_dtype (quantize_general.cu). Plain C++ like
// kernels.h; each launcher returns the launch status (0 = success). Scales and zero points stay on the device.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/int_codes.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// QuantizeLinear: float32 x -> int8 (out_signed) / uint8, scale float32 and zero point (int8 / uint8 as out, may be
// null) per tensor (axis_len 1) or per axis (axis_len values, `inner` elements apart). Half-to-even rounding,
// saturating. DequantizeLinear: x code 0 uint8, 1 int8, 2 int32, 3 int16, 4 uint16 -> float32 (zero point of x's dtype,
// may be null).
int quantize_f32(const float* x, const float* scale, const void* zp, void* y, bool out_signed, int64_t n,
                 int64_t axis_len, int64_t inner, StreamT stream);
int dequantize_f32(const void* x, int x_code, const float* scale, const void* zp, float* y, int64_t n, int64_t axis_len,
                   int64_t inner, StreamT stream);

// ---- QuantizeLinear / DequantizeLinear, general parameters (quantize_general.cu)
// ----------------------------------------- Per tensor, per axis or blocked (opset 21): element (i_0 .. i_r-1) of X
// reads its scale / zero point at sum_d (d == axis ? i_d / block : i_d) * param_strides[d] (strides 0 where the
// parameter does not vary).
struct QuantParams {
  int rank = 0;
  int64_t dims[kMaxDims] = {}, param_strides[kMaxDims] = {};
  int axis = -1;
  int64_t block = 1;
};
// Quantize float32 x with a float32 scale: rint(float(x) / float(scale)) + zero point (half to even), saturated to
// the output's range. q_code (output, zero point): kI8, kU8, kI16 or kU16; zp may be null (0).
// ps / pz: the layouts of the scale and of the zero point (they may differ: a per-axis scale, a scalar zero point).
int quantize_general(const float* x, const float* scale, const void* zp, void* y, int q_code, int64_t n,
                     const QuantParams& ps, const QuantParams& pz, StreamT stream);
// Dequantize x (q_code kI8, kU8, kI16, kU16 or kI32; zero point of that dtype, may be null): (x - zp) * scale in
// double, stored as float32.
int dequantize_general(const void* x, const float* scale, const void* zp, float* y, int q_code, int64_t n,
                       const QuantParams& ps, const QuantParams& pz, StreamT stream);

}  // namespace kilnrt::cuda::kernels
