// Host entry points of the kernels for op cases the main CUDA kernels do not cover (misc_gaps.cu): the
// ai.onnx.preview.training optimizers (Adagrad, Momentum, Adam), BatchNormalization with parameters on the device
// (inference or training statistics), MaxPool with the Indices output or on 8-bit integers, and Dropout's mask.
// Plain C++ like kernels.h; each launcher returns the launch status (0 = success). Scalars that are device values
// (the optimizers' R and T) are read by the kernels, so nothing here synchronises (graph-capture safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::gaps {

// ---- optimizers (formulas of src/ops/math/training/training.cc, computed in double) -----------------------------------------
// Scalar inputs on the device: r is float32 (r_f64 false) or float64; t is int64.
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

// ---- BatchNormalization (float32; parameters [c] on the device) ------------------------------------------------------
// x [n, c, size]. training: batch statistics (population variance, double sums) replace mean / var, and
// running_mean / running_var (may be null) get mean * momentum + batch * (1 - momentum). One block per channel.
struct BatchNormArgs {
  const float* x = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  float* y = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  int64_t n = 0, c = 0, size = 0;
  double eps = 1e-5, momentum = 0.9;
  bool training = false;
};
int batch_norm_f32(const BatchNormArgs& a, StreamT stream);

// ---- MaxPool over 1-D..3-D (geometry padded to 3 dims with leading 1s, like ops::nn::Geometry3) -----------------------
struct Pool3 {
  int64_t planes = 0;  // n * c
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};  // begin pads
};
// x / y dtype: 0 float32, 1 int8, 2 uint8. indices (int64, may be null): flat offsets into x, row major
// (column_major false) or column major over the spatial dims. A window without an input element gives -inf (float)
// or the dtype's lowest value (8-bit) and index 0 — as the CPU reference.
int max_pool3(int dt, const void* x, void* y, int64_t* indices, bool column_major, const Pool3& p, StreamT stream);

// ---- Dropout (inference, or training with ratio 0): y = x, mask = true -------------------------------------------------
int dropout_identity_mask(const void* x, void* y, size_t elem_size, bool* mask, int64_t n, StreamT stream);

}  // namespace kilnrt::cuda::kernels::gaps
