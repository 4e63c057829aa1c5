// Host-side planning of kernels::gather's fast path (strided_copy_fast.cu), header-only so that the CPU tests check
// it without a GPU (tests/cpp/test_strided_copy_plan.cc): x viewed as [outer, axis_dim, inner] -> y [outer, n_idx,
// inner]; each unit moves 16 bytes when rows (inner * element size) and both pointers allow, else one element; all
// index math in 32 bits (the generic kernel divides in 64 bits three times per element).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/strided_copy_plan.h"

namespace kilnrt::cuda::kernels {

struct GatherPlan {
  uint32_t inner_units = 0;  // units per gathered row
  uint32_t n_idx = 0, axis_dim = 0;
  uint32_t units = 0;  // units of output
  size_t unit = 0;     // bytes per unit: the element size or 16
};

inline bool plan_gather(int64_t outer, int64_t axis_dim, int64_t n_idx, int64_t inner, size_t elem, uintptr_t x,
                        uintptr_t y, GatherPlan* plan) {
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return false;
  if (outer < 0 || axis_dim < 0 || n_idx < 0 || inner < 0) return false;
  const int64_t row = inner * static_cast<int64_t>(elem);
  const size_t unit = (row % 16 == 0 && x % 16 == 0 && y % 16 == 0) ? 16 : elem;
  const int64_t iu = row / static_cast<int64_t>(unit);
  constexpr int64_t kMax = 2147483647LL;
  if (iu > kMax || axis_dim > kMax || n_idx > kMax) return false;
  if (outer * axis_dim > kMax || outer * axis_dim * iu > kMax || outer * n_idx * iu > kMax) return false;
  plan->inner_units = static_cast<uint32_t>(iu);
  plan->n_idx = static_cast<uint32_t>(n_idx);
  plan->axis_dim = static_cast<uint32_t>(axis_dim);
  plan->units = static_cast<uint32_t>(outer * n_idx * iu);
  plan->unit = unit;
  return true;
}

// Output unit u of a plan: its index position j and the source unit for index value k (already made non-negative
// and checked against axis_dim by the caller). What the kernel computes per unit.
KILNRT_HOST_DEVICE inline uint32_t gather_index_position(const GatherPlan& p, uint32_t u) {
  return (u / p.inner_units) % p.n_idx;
}
KILNRT_HOST_DEVICE inline uint32_t gather_source_unit(const GatherPlan& p, uint32_t u, uint32_t k) {
  const uint32_t r = u / p.inner_units;
  const uint32_t in = u - r * p.inner_units;
  const uint32_t o = r / p.n_idx;
  return (o * p.axis_dim + k) * p.inner_units + in;
}

}  // namespace kilnrt::cuda::kernels
