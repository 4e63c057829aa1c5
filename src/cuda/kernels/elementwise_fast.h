// Fast paths of kernels::binary / where / unary (elementwise_fast.cu), planned on the host by elementwise_plan.h:
// merged dims, 32-bit index math, 16-byte vectors along the innermost dim (flat same-shape, scalar, bias-like and
// per-channel broadcasts), a scalar tail. Each returns the launch status (0 = success), or -1 when the fast path does
// not apply (integer / comparison ops, indices beyond 32 bits, a non-contiguous output): the caller then runs the
// generic kernel.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/elementwise_ops.h"
#include "cuda/kernels/elementwise_plan.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// dtype: binary's codes (0 float32, 4 float16, 5 bfloat16 handled; arithmetic ops only).
int binary_fast(BinaryOp op, int dtype, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
                StreamT stream);
int where_fast(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc,
               size_t elem_size, StreamT stream);
// dt: 0 float32, 1 float16, 2 bfloat16.
int unary_fast(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream);

// The plan binary_fast / where_fast use for a Broadcast3 (host code, tested on the CPU). `inputs` lists which of
// bc.s0 / s1 / s2 are inputs (binary: {1, 2}, s0 must then describe the contiguous output; where: {0, 1, 2}).
inline bool plan_broadcast3(const Broadcast3& bc, int64_t n, const int* inputs, int n_in, bool s0_is_output,
                            const uintptr_t* in_ptr, const size_t* in_elem, uintptr_t out_ptr, size_t elem,
                            ElementwisePlan* plan) {
  int64_t strides[kMaxElementwiseInputs][kMaxDims] = {};
  if (bc.contiguous_same) {
    const int64_t dims[1] = {n};
    for (int k = 0; k < n_in; ++k) strides[k][0] = 1;
    return plan_elementwise(1, dims, n_in, strides, in_ptr, in_elem, out_ptr, elem, plan);
  }
  if (bc.rank < 0 || bc.rank > kMaxDims) return false;
  const int64_t* src[3] = {bc.s0, bc.s1, bc.s2};
  if (s0_is_output) {  // the output must be the contiguous tensor of bc.dims
    int64_t run = 1;
    for (int d = bc.rank - 1; d >= 0; --d) {
      if (bc.dims[d] != 1 && bc.s0[d] != run) return false;
      run *= bc.dims[d];
    }
  }
  int64_t total = 1;
  for (int d = 0; d < bc.rank; ++d) total *= bc.dims[d];
  if (total != n) return false;
  for (int k = 0; k < n_in; ++k)
    for (int d = 0; d < bc.rank; ++d) strides[k][d] = src[inputs[k]][d];
  return plan_elementwise(bc.rank, bc.dims, n_in, strides, in_ptr, in_elem, out_ptr, elem, plan);
}

}  // namespace kilnrt::cuda::kernels
