// com.kilnrt:SqueezeExcite — a whole squeeze-and-excitation block in one node, made by passes/fuse_squeeze_excite
// (EfficientNet, MobileNetV3):
//   m[n,c] = mean over H, W of X[n,c,:,:]
//   h[n,j] = act(B1[j] + sum_c W1[j,c] m[n,c])        (the first 1x1 conv, C -> Cs)
//   s[n,c] = gate(B2[c] + sum_j W2[c,j] h[n,j])       (the second 1x1 conv, Cs -> C)
//   Y[n,c,h,w] = X[n,c,h,w] * s[n,c]
// Inputs: X [N,C,H,W]; W1 (Cs*C values, dim 0 = Cs: [Cs,C] or the conv's [Cs,C,1,1]); B1 [Cs] (optional, "");
// W2 (C*Cs values, dim 0 = C); B2 [C] (optional). Attributes: `activation` / `activation_params` and `gate` /
// `gate_params`, with FusedConv's names and parameters (ops/nn/fused_conv/fused_conv.h; absent = none). The CPU
// reference computes in float32 (double sums for the mean); the CUDA layer in float32 from 16-bit storage.
#pragma once
#include "ir/graph.h"
#include "ops/nn/fused_conv/fused_conv.h"

namespace kilnrt::ops::nn {

constexpr const char* kSqueezeExciteOp = "SqueezeExcite";

struct SqueezeExciteParams {
  FusedEpilogue act, gate;  // only .act, .a and .b are used
};
// Reads the two activations of a SqueezeExcite node; throws kInvalidModel naming the node for an unknown name or a
// wrong number of parameters.
SqueezeExciteParams read_squeeze_excite(const ir::Node& node);

}  // namespace kilnrt::ops::nn
