// Host entry point of the float64 Softmax / LogSoftmax kernels (softmax_f64.cu) behind the float64 branch of the CUDA
// Softmax / LogSoftmax layer: the ONNX 1.23 expanded Attention / FlexAttention function bodies run in double. Storage
// and arithmetic in double, following the CPU reference (src/ops/nn/softmax/softmax.cc): max-subtracted softmax, sums
// in index order. Plain C++ like kernels.h; the launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::f64 {

// Softmax (log = false) or LogSoftmax (log = true) over the middle dim of x viewed as [outer, n, inner]. inner == 1:
// one block per row (block-wide max and sum in double); otherwise one thread per (outer, inner) column. Like the CPU
// reference, a row holding NaN, or only -inf, gives NaN.
int softmax(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream);

}  // namespace kilnrt::cuda::kernels::f64
