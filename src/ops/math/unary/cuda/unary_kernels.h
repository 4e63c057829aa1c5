// Host entry points of the unary kernels (unary.cu): the float activations and math of the CUDA unary / Clip layer
// (unary_layer.cc), also the Gelu epilogue of fused GEMMs. Plain C++ like kernels.h; each launcher returns the launch
// status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/elementwise_ops.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// dt: 0 float32, 1 float16, 2 bfloat16 (16-bit storage, float32 math / accumulation).
int unary(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream);
// float64 storage and math for a subset of the ops (unary_f64_op: Identity Exp Log Sqrt Neg Abs Reciprocal Floor Ceil
// Relu Sin Cos Tanh Sigmoid); other ops return cudaErrorInvalidValue.
bool unary_f64_op(UnaryOp op);
int unary_f64(UnaryOp op, const double* x, double* y, int64_t n, StreamT stream);

}  // namespace kilnrt::cuda::kernels
