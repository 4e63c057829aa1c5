// GELU as the CPU references of the com.kilnrt fused ops compute it (unary/kilnrt_gelu.cc, nn/gemm/fused_matmul.cc):
// x * Phi(x) in double, exact (erf) or the tanh form, per the node's "approximate" attribute.
#pragma once
#include <cmath>
#include <string>

#include "core/check.h"
#include "ir/graph.h"

namespace kilnrt::ops::nn {

inline bool gelu_tanh(const ir::Node& n) {
  const std::string a = n.attr_string("approximate", std::string("none"));
  KILNRT_CHECK(a == "none" || a == "tanh", kInvalidModel, n.describe(),
               "approximate must be 'none' or 'tanh', got '" << a << "'");
  return a == "tanh";
}

inline float gelu(float xf, bool tanh_form) {
  const double x = xf;
  if (tanh_form)
    return static_cast<float>(0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
  return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
}

}  // namespace kilnrt::ops::nn
