#include "ops/reduce/reduce_util.h"

#include "ops/shape/shape_util.h"

namespace kilnrt::ops {

ReduceLayout make_reduce_layout(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims) {
  const size_t rank = shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> strides = contiguous_strides(shape);
  ReduceLayout L;
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      red_dims.push_back(shape[d]);
      red_strides.push_back(strides[d]);
      if (keepdims) L.out_shape.push_back(1);
    } else {
      kept_dims.push_back(shape[d]);
      kept_strides.push_back(strides[d]);
      L.out_shape.push_back(shape[d]);
    }
  }
  // Enumerates every index of `dims` in row-major order, collecting sum(idx * strides).
  auto enumerate = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& st) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<int64_t> offs(static_cast<size_t>(n));
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      offs[static_cast<size_t>(i)] = off;
      for (size_t d = dims.size(); d-- > 0;) {
        ++idx[d];
        off += st[d];
        if (idx[d] < dims[d]) break;
        off -= idx[d] * st[d];
        idx[d] = 0;
      }
    }
    return offs;
  };
  L.base_offsets = enumerate(kept_dims, kept_strides);
  L.reduce_offsets = enumerate(red_dims, red_strides);
  return L;
}

AxisView axis_view(const Shape& shape, int64_t axis) {
  AxisView v;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      v.outer *= shape[d];
    else if (d == axis)
      v.dim = shape[d];
    else
      v.inner *= shape[d];
  }
  return v;
}

}  // namespace kilnrt::ops
