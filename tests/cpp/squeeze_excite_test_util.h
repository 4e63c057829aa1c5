// A squeeze-and-excitation block for the SqueezeExcite fusion tests (CPU and CUDA): depthwise conv + activation,
// the squeeze (GlobalAveragePool or ReduceMean over H, W), two 1x1 convs with their activations, the Mul with the
// block input, and the 1x1 projection conv after it (EfficientNet / MobileNetV3 style, torchvision's export).
#pragma once
#include <string>

#include "conv_fusion_test_util.h"

namespace kilnrt::testing_conv {

struct SeBlock {
  Shape x = {2, 16, 8, 8};
  int64_t cs = 4;
  bool reduce_mean = false;  // ReduceMean(axes 2, 3) instead of GlobalAveragePool
  bool mobilenet = false;    // Relu + HardSigmoid (alpha 1/6, beta 0.5) instead of SiLU + Sigmoid
  bool bias = true;          // the two 1x1 convs have biases
  bool scale_first = true;   // Mul(s, x) (torchvision) instead of Mul(x, s)
};

// Adds `act`(v) -> out: "silu" as x * Sigmoid(x) (the exporters' form), "relu", "sigmoid", "hardsigmoid".
inline void se_activation(GraphBuilder& b, const std::string& act, const std::string& v, const std::string& out) {
  if (act == "silu") {
    b.node("Sigmoid", {v}, {v + "_sig"});
    b.node("Mul", {v, v + "_sig"}, {out});
  } else if (act == "relu") {
    b.node("Relu", {v}, {out});
  } else if (act == "sigmoid") {
    b.node("Sigmoid", {v}, {out});
  } else {
    ir::Node& n = b.node("HardSigmoid", {v}, {out});
    n.attrs["alpha"] = float_attr(1.f / 6.f);
    n.attrs["beta"] = float_attr(0.5f);
  }
}

inline ir::Graph se_block_graph(const SeBlock& s) {
  const int64_t c = s.x[1];
  GraphBuilder b;
  b.input("x", s.x);
  b.conv("x", "dw", c, c, 3, c, true);
  se_activation(b, s.mobilenet ? "relu" : "silu", "dw", "d");
  if (s.reduce_mean) {
    b.node("ReduceMean", {"d"}, {"g"}).attrs["axes"] = ints_attr({2, 3});
  } else {
    b.node("GlobalAveragePool", {"d"}, {"g"});
  }
  b.conv("g", "e1", c, s.cs, 1, 1, s.bias);
  se_activation(b, s.mobilenet ? "relu" : "silu", "e1", "h");
  b.conv("h", "e2", s.cs, c, 1, 1, s.bias);
  se_activation(b, s.mobilenet ? "hardsigmoid" : "sigmoid", "e2", "s");
  if (s.scale_first)
    b.node("Mul", {"s", "d"}, {"m"});
  else
    b.node("Mul", {"d", "s"}, {"m"});
  b.conv("m", "y", c, 8, 1, 1, true);
  b.output("y");
  return b.finish();
}

}  // namespace kilnrt::testing_conv
