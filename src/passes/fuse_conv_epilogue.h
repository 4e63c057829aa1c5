// Conv epilogue fusion: Conv (+ bias) (+ Add of a tensor of exactly the Conv output's shape) (+ activation) becomes
// one com.kilnrt:FusedConv node (ops/nn/fused_conv/fused_conv.h), Y = act(Conv(X, W, B) + Z). Activations: Relu, Clip
// (constant bounds), LeakyRelu, HardSigmoid, HardSwish (also as x * HardSigmoid(x) with alpha 1/6, beta 0.5), Sigmoid,
// SiLU (x * Sigmoid(x)), Gelu (opset 20 op, erf or tanh). Every intermediate value must have exactly one reader (SiLU's
// x: the Sigmoid and the Mul) and must not be a graph output. An Add whose other operand would broadcast, or whose
// shape is not known to be equal, is left alone. Run after Conv+BN folding (so that BN is already in the weights).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of FusedConv nodes made. Needs inferred shapes. KILNRT_NO_FUSION=conv-epilogue (or =all) skips it.
size_t fuse_conv_epilogues(ir::Graph& graph);
}  // namespace kilnrt::passes
