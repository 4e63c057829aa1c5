// Pointwise fusion: maximal connected groups of pointwise nodes — unary math, activations, binary
// arithmetic with numpy broadcasting, Where, Clip, Pow, Cast between float types — whose intermediate values are read
// only inside the group (and are no graph outputs) become one com.kilnrt:FusedPointwise node
// (ops/nn/fused_pointwise/fused_pointwise.h) with the group's external inputs; single-element float constants become
// immediates of the program. Groups of one node are left alone. It runs after the conv / GEMM epilogue, GELU, LayerNorm
// and attention fusions (their patterns are gone by then), for CUDA engines only: the CUDA layer generates one kernel
// per group with NVRTC at build time.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of FusedPointwise nodes made. KILNRT_NO_FUSION=pointwise (or =all) skips it.
size_t fuse_pointwise(ir::Graph& graph);
}  // namespace kilnrt::passes
