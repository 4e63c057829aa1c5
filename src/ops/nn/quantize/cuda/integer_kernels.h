// Host entry points of the integer / quantized kernels (integer.cu): DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger, QLinearConv. Plain C++ like kernels.h; each launcher returns the launch status (0 =
// success). Scales and zero points stay on the device: the kernels read them, so nothing here synchronises or reads
// device memory on the host (graph-capture safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::integer {

// DynamicQuantizeLinear of float32 x [n]: scale = (max(x, 0) - min(x, 0)) / 255 (float32), zp = saturate(rint(-min /
// scale)), y = saturate(rint(x / scale) + zp) as uint8. scale / zp written to the device scalars (scratch when the
// outputs are absent).
int dynamic_quantize_f32(const float* x, uint8_t* y, float* scale, uint8_t* zp, int64_t n, StreamT stream);

// Requantization of an int32 accumulator to 8 bits: saturate(rint(float(acc * a_scale * b_scale[m?] / y_scale)) +
// y_zp). Scales float32 on the device; b_scale has b_scale_len values (1 or one per output channel).
struct Requant {
  bool enabled = false;  // false: write the int32 accumulator
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  int64_t b_scale_len = 1;
  const float* y_scale = nullptr;
  const void* y_zp = nullptr;
  bool y_signed = false;
  bool a_f16 = false, b_f16 = false, y_f16 = false;  // the scale is float16 storage (QLinearMatMul), else float32
};

// A (8-bit) zero point: null (0), or zp_len values (1: per tensor; else per row / column / output channel).
struct ZeroPoint {
  const void* p = nullptr;
  bool is_signed = false;
  int64_t len = 1;
};

// Batched integer matmul: y [batch..., M, N] = sum_k (a[m, k] - azp[m?]) * (b[k, n] - bzp[n?]) in int32.
// batch: output batch dims with the element offsets per batch dim of a (sa, in units of M*K matrices) and b (sb,
// units of K*N), 0 for a broadcast dim. y int32, or 8-bit when rq.enabled.
struct MatBatch {
  int rank = 0;
  int64_t d[kMaxDims] = {};
  int64_t sa[kMaxDims] = {};
  int64_t sb[kMaxDims] = {};
};
int matmul_integer(const void* a, bool a_signed, ZeroPoint azp, const void* b, bool b_signed, ZeroPoint bzp, void* y,
                   const MatBatch& batch, int64_t m, int64_t k, int64_t n, const Requant& rq, StreamT stream);

// Direct grouped convolution (1-D to 3-D padded to 3 dims) of 8-bit x [N, C, in...] and w [M, C/group, k...]:
// acc = sum (x - xzp) * (w - wzp[m?]) (+ bias int32 [M] when given), padding counts as x == xzp. y int32 or 8-bit.
struct ConvGeom {
  int64_t n = 0, c = 0, m = 0, group = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
};
int conv_integer(const void* x, bool x_signed, ZeroPoint xzp, const void* w, bool w_signed, ZeroPoint wzp,
                 const int32_t* bias, void* y, const ConvGeom& g, const Requant& rq, StreamT stream);

}  // namespace kilnrt::cuda::kernels::integer
