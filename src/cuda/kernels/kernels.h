// Types and host entry points of kilnrt's CUDA kernels shared by many op folders and the executor (strided copy,
// cast and 16-bit conversions, error text: src/cuda/kernels/*.cu); each op's own entry points are in its folder's
// cuda/*_kernels.h. Plain C++: no CUDA headers, so layers include it freely. Each launcher enqueues on `stream` and
// returns the launch status (cudaError_t as int, 0 = success) read with cudaGetLastError right after its own launch —
// kilnrt's cudart is linked statically, so that error state belongs to kilnrt alone. Tensors are contiguous row-major
// unless strides are passed.
#pragma once
#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace kilnrt::cuda::kernels {

using StreamT = CUstream_st*;
constexpr int kMaxDims = 8;

// Shape + strides in elements for up to kMaxDims dims (strides may be 0 for broadcasting or negative for steps).
struct Strided {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};  // destination strides
  int64_t in_strides[kMaxDims] = {};   // source strides
  int64_t out_offset = 0, in_offset = 0;
};

// dst[out_offset + sum(i_d*out_strides_d)] = src[in_offset + sum(i_d*in_strides_d)] for every index of dims.
// Covers Transpose, Slice, Split, Concat, Expand. elem_size: 1, 2, 4 or 8.
int strided_copy(void* dst, const void* src, const Strided& s, size_t elem_size, StreamT stream);

// Broadcast of up to three operands over an output of shape `dims`: per-operand strides in elements, 0 on broadcast
// dims (binary: s0 output, s1 / s2 inputs; Where: s0 condition, s1 / s2 values).
struct Broadcast3 {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t s0[kMaxDims] = {}, s1[kMaxDims] = {}, s2[kMaxDims] = {};
  bool contiguous_same = false;  // all operands have the output's shape (fast path)
};

// float32 <-> 16-bit float (bf16 = 0: IEEE half, 1: bfloat16), round to nearest even; NaN / inf preserved, values
// beyond the 16-bit range become inf (half). For the 16-bit GEMM operands of --fp16 / --bf16 engines.
int f32_to_16(const float* x, void* y, int64_t n, int bf16, StreamT stream);
int f16_to_32(const void* x, float* y, int64_t n, int bf16, StreamT stream);
// Cast between dtype codes 0 float32, 1 int64, 2 int32, 3 bool, 4 int8, 5 uint8, 6 float64, 7 float16, 8 bfloat16.
int cast(const void* x, int from, void* y, int to, int64_t n, StreamT stream);

// 2-D convolution geometry over NCHW (grouped, strided, dilated, padded): the direct convolution
// (ops/nn/conv/cuda/conv2d_direct_kernels.h) and the convolution kernels take it.
struct Conv2d {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

const char* error_string(int status);

}  // namespace kilnrt::cuda::kernels
