// Host entry points of the kernels of layers_bits.cc: integer bit logic and shifts (BitwiseAnd / Or /
// Xor / Not, BitShift on signed and unsigned integers), byte copies (BitCast), a bool constant (OptionalHasElement)
// and ReduceMax / ReduceMin of bool tensors. Plain C++ like kernels.h; each launcher returns the launch status
// (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels/extra_kernels.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::bits {

// Integer dtype codes of these kernels.
enum IntCode : int { kI8 = 0, kU8 = 1, kI16 = 2, kU16 = 3, kI32 = 4, kU32 = 5, kI64 = 6, kU64 = 7 };
// Binary ops: 0 and, 1 or, 2 xor, 3 shift left, 4 shift right. Shifts follow the CPU reference
// (src/ops/math/binary/binary.cc shift_value): a right shift of a signed value is arithmetic, a left shift wraps in two's
// complement, a shift amount outside [0, width) gives 0 (or -1 for a right shift of a negative value).
int bit_binary(int op, int int_code, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
               StreamT stream);
// y = ~a for n elements of elem_size bytes (1, 2, 4, 8).
int bit_not(const void* a, void* y, int64_t n, size_t elem_size, StreamT stream);
// dst = src, nbytes bytes (device to device, on the stream).
int copy_bytes(void* dst, const void* src, size_t nbytes, StreamT stream);
// *y = v (one bool).
int fill_bool(bool* y, bool v, StreamT stream);

// ReduceMax (any; empty: false) / ReduceMin (all; empty: true) of a bool tensor. Output element o sits at input
// offset sum(kept index_d * kept_strides_d); the reduced elements at + sum(reduced index_d * red_strides_d).
struct ReduceBool {
  int64_t n_out = 0;
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t red_dims[kMaxDims] = {}, red_strides[kMaxDims] = {};
  int64_t n_red = 1;
  bool is_max = true;
};
int reduce_bool(const ReduceBool& p, const uint8_t* x, uint8_t* y, StreamT stream);

// ---- QuantizeLinear / DequantizeLinear, general parameters (bits_quant.cu) -----------------------------------------
// Per tensor, per axis or blocked (opset 21): element (i_0 .. i_r-1) of X reads its scale / zero point at
// sum_d (d == axis ? i_d / block : i_d) * param_strides[d] (strides 0 where the parameter does not vary).
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

// ---- Resize antialias=1, linear / cubic (bits_resize.cu) ----------------------------------------------------------
// The plan of the main Resize layer (extra_kernels.h; mode 1 linear, 2 cubic). Per axis, with s = min(scale, 1), the
// filter is stretched by 1/s and its weights normalised (src/ops/nn/resize/resize.cc antialias_taps); one thread per
// output element sums the product of the axes' taps in double.
int resize_antialias_f32(const float* x, float* y, const extra::ResizePlan& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels::bits
