#include "ops/shape/shape_util.h"

#include <algorithm>
#include <cstring>

#include "ops/math/broadcast.h"
#include "ops/math/elementwise.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> read_int_input(const CpuContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  KILNRT_CHECK(t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32, kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": input " << i << " ('" << ctx.node.inputs[i] << "') must be int64 or int32, got "
                                << dtype_name(t.dtype()));
  return tensor_to_int64s(t);
}

int64_t read_int_scalar(const CpuContext& ctx, size_t i) {
  std::vector<int64_t> v = read_int_input(ctx, i);
  KILNRT_CHECK(v.size() == 1, kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": input " << i << " ('" << ctx.node.inputs[i]
                                << "') must hold one element, got shape " << shape_to_string(ctx.input(i).shape()));
  return v[0];
}

std::optional<std::vector<int64_t>> axes_for_cpu(const CpuContext& ctx, const char* attr, size_t input_index) {
  if (ctx.node.has_attr(attr)) return ctx.node.attr_ints(attr);
  if (ctx.has_input(input_index)) return read_int_input(ctx, input_index);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> axes_for_infer(const ShapeContext& ctx, const char* attr, size_t input_index,
                                                   bool* unknown) {
  *unknown = false;
  if (ctx.node.has_attr(attr)) return ctx.node.attr_ints(attr);
  if (ctx.has_input(input_index)) {
    auto v = input_known_ints(ctx, input_index);
    if (!v) *unknown = true;
    return v;
  }
  return std::nullopt;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const ir::Node& node) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, node);
    KILNRT_CHECK(std::find(out.begin(), out.end(), n) == out.end(), kInvalidModel, node.describe(),
                 node.op_type << ": axis " << a << " is repeated");
    out.push_back(n);
  }
  return out;
}

std::optional<ir::SymShape> input_shape(const ShapeContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !ctx.inputs[i]->has_shape) return std::nullopt;
  return ctx.inputs[i]->shape;
}

void strided_copy(const void* in, void* out, size_t elem_size, const Shape& out_shape,
                  const std::vector<int64_t>& in_strides, int64_t in_base) {
  // Collapse: drop size-1 dims, merge dims whose input addressing stays linear.
  std::vector<int64_t> dims, strides;
  int64_t numel = 1;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    numel *= out_shape[d];
    if (out_shape[d] == 1) continue;
    if (!dims.empty() && strides.back() == in_strides[d] * out_shape[d]) {
      dims.back() *= out_shape[d];
      strides.back() = in_strides[d];
    } else {
      dims.push_back(out_shape[d]);
      strides.push_back(in_strides[d]);
    }
  }
  if (numel == 0) return;
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(1);
  }
  const int nd = static_cast<int>(dims.size());
  const int64_t row_len = dims.back();
  const int64_t row_stride = strides.back();
  const int64_t rows = numel / row_len;
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  dispatch_by_size(elem_size, "strided_copy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = reinterpret_cast<const T*>(src);
    T* o = reinterpret_cast<T*>(dst);
    const bool parallel = numel >= kParallelThreshold && rows > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = in_base;
      int64_t rem = r;
      for (int d = nd - 2; d >= 0; --d) {
        off += (rem % dims[d]) * strides[d];
        rem /= dims[d];
      }
      T* y = o + r * row_len;
      if (row_stride == 1) {
        std::memcpy(y, s + off, static_cast<size_t>(row_len) * sizeof(T));
      } else {
        for (int64_t j = 0; j < row_len; ++j) y[j] = s[off + j * row_stride];
      }
    }
  });
}

}  // namespace kilnrt::ops
