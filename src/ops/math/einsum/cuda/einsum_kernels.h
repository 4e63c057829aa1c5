// Host entry point of the direct Einsum kernel (einsum.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Einsum as a direct loop: every output element sums, over the contracted labels, the product of up to
// kEinsumInputs inputs. Strides per label and input (0: the label is absent or broadcast; repeated labels in one
// input add their strides: diagonals). dtype 0 float32, 6 float64.
constexpr int kEinsumInputs = 3;
struct EinsumPlan {
  int n_inputs = 0;
  int out_rank = 0, sum_rank = 0;
  int64_t out_dims[kMaxDims] = {}, sum_dims[kMaxDims] = {};
  int64_t out_strides[kEinsumInputs][kMaxDims] = {}, sum_strides[kEinsumInputs][kMaxDims] = {};
};
int einsum(const void* const* inputs, void* y, const EinsumPlan& p, int dtype, StreamT stream);

}  // namespace kilnrt::cuda::kernels
