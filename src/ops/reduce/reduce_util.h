// Shared by the reductions: which axes a Reduce* / ArgMax / TopK node reduces, the output shape, and the offsets
// of the reduced elements.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {

// Layout of a reduction of `shape` over `axes` (normalised, any order).
struct ReduceLayout {
  Shape out_shape;                      // with keepdims applied
  std::vector<int64_t> base_offsets;    // input offset of the first reduced element, per output element
  std::vector<int64_t> reduce_offsets;  // offsets of the reduced elements relative to a base offset
};
ReduceLayout make_reduce_layout(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims);

// The (outer, dim, inner) view of a tensor around one axis: element (o, k, i) is at (o * dim + k) * inner + i.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};
AxisView axis_view(const Shape& shape, int64_t axis);

}  // namespace kilnrt::ops
