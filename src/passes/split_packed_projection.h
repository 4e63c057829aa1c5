// Packed in-projections split into one GEMM per part. MultiheadAttention projects Q, K and V with one
// GEMM, `MatMul(A, W [K, P*E]) [+ bias [P*E]] -> Reshape([..., P, E])`, and select_packed_qkv reads each part with
// `Slice([c, c + 1) on the P axis)`: a strided copy per part. When every reader of the Reshape is such a Slice, each
// Slice becomes `MatMul(A, W[:, cE:(c+1)E]) [+ bias part] -> Reshape([0.., 1, E])` (a view): P GEMMs of width E write
// the parts contiguously, and the P copies are gone. The products and sums are the same, so outputs are equal.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {

// Returns the number of projections split. Runs under KILNRT_NO_FUSION's "attention" switch (fuse_attention calls it
// after select_packed_qkv); needs inferred shapes.
size_t split_packed_projection(ir::Graph& graph);

}  // namespace kilnrt::passes
