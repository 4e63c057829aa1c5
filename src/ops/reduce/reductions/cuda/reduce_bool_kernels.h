// Host entry point of the ReduceMax / ReduceMin kernel of bool tensors (reduce_bool.cu). Plain C++ like kernels.h;
// returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// ReduceMax (any; empty: false) / ReduceMin (all; empty: true) of a bool tensor. Output element o sits at input
// offset sum(kept index_d * kept_strides_d); the reduced elements at + sum(reduced index_d * red_strides_d).
struct ReduceBool {
  int64_t n_out = 0;
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t red_dims[kMaxDims] = {}, red_strides[kMaxDims] = {};
  int64_t n_red = 1;
  bool is_max = true;
};
int reduce_bool(const ReduceBool& p, const uint8_t* x, uint8_t* y, StreamT stream);

}  // namespace kilnrt::cuda::kernels
