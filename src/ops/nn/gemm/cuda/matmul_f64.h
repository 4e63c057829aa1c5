// Host entry point of the float64 MatMul kernel (matmul_f64.cu) behind the float64 branch of the CUDA MatMul layer
// (gemm_layer.cc): the ONNX 1.23 expanded Attention / FlexAttention function bodies run in double. Storage and
// arithmetic in double, following the CPU reference (src/ops/nn/gemm/gemm.cc): each output sums over k in order.
// Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::f64 {

// Batch dims of a MatMul output (numpy broadcasting) with each operand's offset step per batch index, in elements
// (0 where that operand is broadcast). rank 0: a single matrix product.
struct MatMulBatch {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
};

// c[batch][m, n] = a[batch][m, k] x b[batch][k, n], row-major, c contiguous over the batch (m * n per batch).
// Tiled (64 x 64 outputs per block, 16-deep k slices in shared memory); each output sums over k in order.
int matmul(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k, const MatMulBatch& batch,
           StreamT stream);

}  // namespace kilnrt::cuda::kernels::f64
