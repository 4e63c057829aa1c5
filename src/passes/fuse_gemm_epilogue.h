// GEMM epilogue fusion: MatMul(A, W) + bias [-> Gelu] and Gemm(A, W, bias) -> Gelu, with W a constant matrix and
// the bias a constant vector along the output's last dim, become one com.kilnrt:FusedMatMul(A, W [, bias]) node
// (attributes trans_b, activation "none" | "gelu", approximate "none" | "tanh"): the CUDA layer runs it as one
// cuBLASLt call with a BIAS / GELU_BIAS epilogue. Run after fuse_gelu.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of GEMMs that took an epilogue. KILNRT_NO_FUSION=gemm-epilogue (or =all) skips it.
size_t fuse_gemm_epilogues(ir::Graph& graph);
}  // namespace kilnrt::passes
