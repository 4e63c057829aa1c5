// The cuBLASLt call of a com.kilnrt:FusedMatMul layer (fused_matmul_layer.cc), shared with the build-time choice of
// the stored weight layout (gemm_weight_layout.h).
#pragma once
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/lt_gemm.h"

namespace kilnrt::backends::cuda {

// Y [M, N] = A [..., K] x op(W) + bias (+ residual) on the tensors of `l` (inputs A, W, optional bias, optional
// residual; output Y): W is [K, N], or [N, K] with trans_b. `lt_gelu`: cuBLASLt's GELU epilogue. m or n 0: nothing
// else is filled. Throws naming `name` on mismatched shapes or dtypes. The caller sets the tactic and calls lt_gemm.
GemmArgs fused_matmul_args(const LayerLaunch& l, bool trans_b, bool lt_gelu, Precision precision,
                           const std::string& name);

}  // namespace kilnrt::backends::cuda
