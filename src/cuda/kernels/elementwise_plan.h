// Host-side planning of the fast elementwise kernels (elementwise_fast.cu: binary arithmetic, Where, unary), header
// only so that the CPU tests check it without a GPU (tests/cpp/test_elementwise_plan.cc). The output is contiguous;
// each input has per-dim strides (0 on broadcast dims). Planning drops size-1 dims and merges dims that are
// contiguous for every operand, so the common cases collapse to a low rank:
//   same shape            -> rank 1, every input stride 1          (flat, 16-byte vectors, scalar tail)
//   scalar operand        -> rank 1, that input's stride 0
//   bias [.., C] + [C]    -> rank 2 [R, C], bias strides [0, 1]
//   per-channel SE scale  -> rank 3 [N, C, HW], scale strides [C|0, 1, 0]
// Units: V consecutive output elements along the innermost dim (V = 16 bytes / element size when every input is
// contiguous (stride 1) or broadcast (stride 0) along it and pointers / strides are aligned, else 1). All index math
// fits 32 bits or the plan is refused (the caller keeps the generic 64-bit kernel).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

constexpr int kMaxElementwiseInputs = 3;

struct ElementwisePlan {
  int rank = 0;                                           // merged dims (>= 1)
  uint32_t dims[kMaxDims] = {};                           // dims[rank - 1] counted in units (elements / vec)
  int32_t strides[kMaxElementwiseInputs][kMaxDims] = {};  // in elements; innermost: 0 or 1 when vec > 1
  int vec = 1;                                            // elements per unit
  uint32_t units = 0;                                     // units of vec elements (0: only the tail, or nothing)
  uint32_t tail = 0;                                      // elements after units * vec (rank 1 only), done one by one
};

// rank/dims: the output shape; in_strides[k]: input k's strides over those dims; in_ptr/in_elem: its address and
// element size (alignment); out_ptr/elem: the output's (elem sets the vector width 16 / elem). Returns false when the
// fast path does not apply (rank too high, indices beyond 32 bits, negative strides, n_in out of range).
inline bool plan_elementwise(int rank, const int64_t* dims, int n_in, const int64_t (*in_strides)[kMaxDims],
                             const uintptr_t* in_ptr, const size_t* in_elem, uintptr_t out_ptr, size_t elem,
                             ElementwisePlan* plan) {
  if (n_in < 1 || n_in > kMaxElementwiseInputs || rank < 0 || rank > kMaxDims) return false;
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return false;
  ElementwisePlan p;
  int64_t md[kMaxDims], ms[kMaxElementwiseInputs][kMaxDims];
  int r = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] < 0) return false;
    if (dims[d] == 0) {
      *plan = ElementwisePlan{};
      plan->rank = 1;
      return true;
    }
    for (int k = 0; k < n_in; ++k)
      if (in_strides[k][d] < 0) return false;
    if (dims[d] == 1) continue;
    if (r > 0) {
      bool merge = true;
      for (int k = 0; k < n_in && merge; ++k) merge = ms[k][r - 1] == in_strides[k][d] * dims[d];
      if (merge) {
        md[r - 1] *= dims[d];
        for (int k = 0; k < n_in; ++k) ms[k][r - 1] = in_strides[k][d];
        continue;
      }
    }
    md[r] = dims[d];
    for (int k = 0; k < n_in; ++k) ms[k][r] = in_strides[k][d];
    ++r;
  }
  if (r == 0) {  // one element
    md[0] = 1;
    for (int k = 0; k < n_in; ++k) ms[k][0] = 0;
    r = 1;
  }
  const int last = r - 1;
  int64_t n = 1;
  for (int d = 0; d < r; ++d) n *= md[d];
  constexpr int64_t kMax = 2147483647LL;
  if (n > kMax) return false;
  for (int k = 0; k < n_in; ++k) {
    int64_t hi = 0;
    for (int d = 0; d < r; ++d) hi += (md[d] - 1) * ms[k][d];
    if (hi > kMax) return false;
  }
  // Vector width: 16 bytes of output per unit.
  const int64_t v = static_cast<int64_t>(16 / elem);
  bool vec = (out_ptr % 16) == 0 && (r == 1 || md[last] % v == 0) && md[last] >= v;
  for (int k = 0; k < n_in && vec; ++k) {
    const int64_t s = ms[k][last];
    if (s != 0 && s != 1) vec = false;
    if (s == 1) {
      if (in_ptr[k] % (static_cast<uint64_t>(v) * in_elem[k]) != 0) vec = false;
      for (int d = 0; d < last; ++d) vec = vec && ms[k][d] % v == 0;
    }
  }
  p.rank = r;
  p.vec = vec ? static_cast<int>(v) : 1;
  for (int d = 0; d < r; ++d) {
    p.dims[d] = static_cast<uint32_t>(md[d]);
    for (int k = 0; k < n_in; ++k) p.strides[k][d] = static_cast<int32_t>(ms[k][d]);
  }
  if (vec) {
    p.dims[last] = static_cast<uint32_t>(md[last] / v);
    if (r == 1) p.tail = static_cast<uint32_t>(md[0] % v);
  }
  p.units = static_cast<uint32_t>(n / p.vec);
  *plan = p;
  return true;
}

// Element offset of input k for the first element of unit u (what the kernels compute per unit, 32-bit).
inline int32_t elementwise_unit_offset(const ElementwisePlan& p, int k, uint32_t u) {
  uint32_t rem = u;
  int32_t off = 0;
  for (int d = p.rank - 1; d > 0; --d) {
    const uint32_t q = rem / p.dims[d];
    const uint32_t idx = rem - q * p.dims[d];
    rem = q;
    off += int32_t(idx) * (d == p.rank - 1 ? p.vec : 1) * p.strides[k][d];
  }
  return off + int32_t(rem) * (p.rank == 1 ? p.vec : 1) * p.strides[k][0];
}

}  // namespace kilnrt::cuda::kernels
