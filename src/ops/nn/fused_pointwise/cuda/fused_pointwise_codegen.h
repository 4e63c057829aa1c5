// CUDA C++ source for a com.kilnrt:FusedPointwise program (ops/nn/fused_pointwise/fused_pointwise.h), compiled with
// NVRTC at build time (fused_pointwise_layer.cc). Host-only: needs no GPU and no CUDA header.
//
// The source defines one argument block (PwArgs below, same layout) and seven kernels (name expressions):
//   fp_scalar<S>  one element per thread iteration, any broadcast (strides per output dim), S = storage of the float
//                 tensors: 0 float32, 1 float16, 2 bfloat16, 3 per tensor (PwArgs::code, e.g. after a Cast)
//   fp_vec<S>     16-byte vector loads and stores (4 float32 / 8 16-bit values per thread) for S = 0, 1, 2, when every
//                 input is contiguous, a scalar, or broadcast so that the last dim is either contiguous or constant
// Math is float32; 16-bit values are converted with PTX cvt / bit operations (no cuda_fp16.h: NVRTC needs no include
// path).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/nn/fused_pointwise/fused_pointwise.h"

namespace kilnrt::backends::cuda {

constexpr int kPwMaxInputs = 8;
constexpr int kPwMaxRank = 6;

// How an input is indexed from the output's linear index.
enum PwInputKind : int {
  kPwContiguous = 0,    // same shape as the output: element i
  kPwScalar = 1,        // one element
  kPwStrided = 2,       // general broadcast: sum of coord * stride
  kPwStridedLast0 = 3,  // strided, last-dim stride 0 (vector path: one value per vector)
  kPwStridedLast1 = 4,  // strided, last-dim stride 1, other strides multiples of the vector width (vector loads)
};

// Storage codes (PwArgs::code / out_code).
enum PwStorage : int { kPwF32 = 0, kPwF16 = 1, kPwBF16 = 2, kPwBool = 3 };

// The kernels' single argument, passed by value (layout shared with the generated source: keep in sync).
struct PwArgs {
  const void* in[kPwMaxInputs];
  long long stride[kPwMaxInputs][kPwMaxRank];
  long long dims[kPwMaxRank];
  int code[kPwMaxInputs];
  int kind[kPwMaxInputs];
  void* out;
  long long n;
  int out_code;
  int rank;
};

// The kernels' name expressions, in a fixed order: fp_scalar<0..3>, fp_vec<0..2>.
const std::vector<std::string>& fused_pointwise_kernel_names();
// The source for program `p`; in_bool[k] says input k is a bool condition (stored as bytes).
std::string fused_pointwise_source(const ops::nn::PwProgram& p, const std::vector<bool>& in_bool);

}  // namespace kilnrt::backends::cuda
