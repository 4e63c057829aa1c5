// Input-activation move (issue 7): a 1x1 FusedConv whose activation its GEMM cannot apply for free (anything but
// none / Relu: SiLU, HardSwish, GELU, ...) and whose output is read only by a depthwise convolution (group == C ==
// M, as its input X) gives the activation to that convolution as its `input_activation` (ops/nn/fused_conv.h):
//   Y = act2(DwConv(act1(Conv1x1(X)))) -> the 1x1 conv ends at its bias / residual, the depthwise FusedConv applies
//   act1 to its input (on load in the tiled NHWC depthwise kernel, kernels/nhwc_depthwise.h).
// efficientnet's / mobilenet's expand convolutions run as one cuBLASLt GEMM (bias epilogue) followed by an
// activation-only pass over the expanded tensor, the largest tensors of those models: the move removes that pass.
// A plain depthwise Conv consumer becomes a FusedConv. Not moved: an output with other readers or that is a graph
// output, a consumer that already has an input activation, non-2-D convolutions.
#pragma once
#include <cstddef>

#include "ir/graph.h"

namespace kilnrt::passes {
// Returns the number of activations moved. Needs inferred shapes; run after fuse_conv_epilogues.
// KILNRT_NO_FUSION=input-act (or =all) skips it; KILNRT_INPUT_ACT=stride1 moves into stride-1 convolutions only.
size_t move_input_activations(ir::Graph& graph);
}  // namespace kilnrt::passes
