// com.kilnrt:FusedConv — a convolution with its epilogue in one node, made by passes/fuse_conv_epilogue:
//   Y = act(Conv(X, W, B) + Z)
// Inputs: X, W, B (optional, ""), Z (optional residual of exactly Y's shape). Attributes: Conv's (group, strides,
// pads, dilations, auto_pad, kernel_shape), `activation` (string, absent = none) and `activation_params` (floats:
// Clip min/max, LeakyRelu alpha, HardSigmoid alpha/beta). Optional `input_activation` / `input_activation_params`
// (same names and params; made by passes/move_input_activation): Y = act(Conv(in_act(X), W, B) + Z), the input
// activation applied to X only (the convolution's zero padding stays zero). The CPU reference runs the Conv kernel
// (on in_act(X), a float32 copy), then the epilogue in place; the CUDA layer runs the convolution, then one epilogue
// kernel (the tiled NHWC depthwise kernel applies the input activation on load, other paths first in place on X:
// with an input activation, X must be read by this node only and be no graph output, check_input_activation_reader).
#pragma once
#include <string>

#include "ir/graph.h"

namespace kilnrt::ops::nn {

constexpr const char* kFusedConvDomain = "com.kilnrt";
constexpr const char* kFusedConvOp = "FusedConv";

// Numeric codes shared with the CUDA epilogue kernel (ops/nn/conv/cuda/conv_epilogue.cu): keep in sync.
enum class FusedActivation : int {
  kNone = 0,
  kRelu = 1,
  kClip = 2,         // clamp(x, a, b)
  kLeakyRelu = 3,    // x < 0 ? a*x : x
  kHardSigmoid = 4,  // clamp(a*x + b, 0, 1)
  kHardSwish = 5,    // x * clamp(x/6 + 0.5, 0, 1)
  kSigmoid = 6,
  kSilu = 7,      // x * sigmoid(x)
  kGelu = 8,      // x * Phi(x) (erf)
  kGeluTanh = 9,  // tanh approximation
};

struct FusedEpilogue {
  FusedActivation act = FusedActivation::kNone;
  float a = 0.f, b = 0.f;
  FusedActivation in_act = FusedActivation::kNone;  // input_activation (applied to X before the convolution)
  float in_a = 0.f, in_b = 0.f;
  bool has_bias = false, has_residual = false;
};

// The activation name stored in the `activation` attribute ("Relu", "Clip", ..., "Silu", "GeluTanh").
const char* fused_activation_name(FusedActivation a);
// Reads a FusedConv node's epilogue (and input activation); throws kInvalidModel naming the node for an unknown
// activation or a wrong number of activation_params / input_activation_params.
FusedEpilogue read_fused_epilogue(const ir::Node& node);
// Throws kUnsupported naming the node when it has an input_activation and its X is read by another node (or twice by
// it) or is a graph output of `graph` (backends may apply the input activation to X in place).
void check_input_activation_reader(const ir::Node& node, const ir::Graph& graph);
// The plain Conv node (op "Conv", Conv's attributes and inputs X, W, B) a FusedConv node convolves with.
ir::Node conv_part_of(const ir::Node& fused);
// "bias+add+relu" (what the epilogue does, for tactics), "in-silu+bias" with an input activation; "none" when empty.
std::string describe_epilogue(const FusedEpilogue& e);
// Applies the activation to one value (float32 math; the CPU reference).
float apply_fused_activation(const FusedEpilogue& e, float x);

}  // namespace kilnrt::ops::nn
