// Input-activation move: a 1x1 FusedConv whose activation its GEMM cannot apply for free (anything but
// none / Relu: SiLU, HardSwish, GELU, ...) and whose output is read only by a depthwise convolution (group == C ==
// M, as its input X) gives the activation to that convolution as its `input_activation`
// (ops/nn/fused_conv/fused_conv.h):
//   Y = act2(DwConv(act1(Conv1x1(X)))) -> the 1x1 conv ends at its bias / residual, the depthwise FusedConv applies
//   act1 to its input (on load in the tiled NHWC depthwise kernel, ops/nn/conv/cuda/nhwc_depthwise.h).
// efficientnet's / mobilenet's expand convolutions run as one cuBLASLt GEMM (bias epilogue) followed by an
// activation-only pass over the expanded tensor, the largest tensors of those models: the move removes that pass.
// A plain depthwise Conv consumer becomes a FusedConv. Not moved: an output with other readers or that is a graph
// output, a consumer that already has an input activation, non-2-D convolutions.
// OPT-IN (KILNRT_INPUT_ACT=1): on an H100 (2026-11-22) the kernel with accurate SiLU applied per window element,
// bounds-tested, was slower, fp16 whole engine off -> on: efficientnet_b0 b32 1.487 -> 1.696 ms, b1 0.463 -> 0.512;
// mobilenet_v3_large b32 0.787 -> 0.810, b1 0.304 -> 0.315 (the expand convs got 2x faster, the depthwise layers
// 1.5-2.3x slower: compute-bound on the activation); the current kernel (fast-math SiLU, no bounds tests) is not
// measured yet (bench/results/README.md).
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of activations moved. Needs inferred shapes; run after fuse_conv_epilogues.
// Off unless KILNRT_INPUT_ACT=1 (all) or =stride1 (stride-1 depthwise convolutions only); KILNRT_NO_FUSION=input-act
// (or =all) skips it either way.
size_t move_input_activations(ir::Graph& graph);
}  // namespace kilnrt::passes
