// Host entry points of the ai.onnx.preview.training optimizer kernels (optimizer.cu): Adagrad, Momentum, Adam, one
// elementwise kernel per optimized tensor. Scalars that are device values (R and T) are read by the kernels, so
// nothing here synchronises (graph-capture safe). Plain C++ like kernels.h; each launcher returns the launch status (0
// = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::optimizer {

// ---- optimizers (formulas of src/ops/math/training/training.cc, computed in double)
// ----------------------------------------- Scalar inputs on the device: r is float32 (r_f64 false) or float64; t is
// int64.
struct OptScalars {
  const void* r = nullptr;
  bool r_f64 = false;
  const int64_t* t = nullptr;
};
// One optimized tensor of n values: x, g and the states are float32 (f64 false) or float64, all of one dtype.
// Outputs x_new and the new states have that dtype too; a null output is skipped (an omitted node output).
struct OptTensor {
  const void* x = nullptr;
  const void* g = nullptr;
  const void* s1 = nullptr;  // Adagrad: h; Momentum: v; Adam: v
  const void* s2 = nullptr;  // Adam: h
  void* x_out = nullptr;
  void* s1_out = nullptr;
  void* s2_out = nullptr;
  int64_t n = 0;
  bool f64 = false;
};
struct OptAttrs {
  double decay = 0, eps = 1e-6, norm = 0, norm_post = 0, alpha = 0.9, beta = 0.999;
  bool nesterov = false;
};
int adagrad(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream);
int momentum(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream);
int adam(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels::optimizer
