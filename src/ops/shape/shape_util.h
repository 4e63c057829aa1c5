// Helpers shared by the shape-manipulation ops (src/ops/shape) and reductions: reading int inputs, contiguous
// strides, strided copies of elements of any dtype, and output-type setters for shape functions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "ir/graph.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {

// Row-major element strides of a shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Elements of an int64/int32 input as int64; throws kInvalidModel naming the node and input otherwise.
std::vector<int64_t> read_int_input(const CpuContext& ctx, size_t i);
// A one-element int input as a scalar; throws naming the node when it has another size.
int64_t read_int_scalar(const CpuContext& ctx, size_t i);

// Axes of a node: from attribute `attr` when present, else from input `input_index` when present (constant in shape
// functions), else nullopt. In shape functions a non-constant axes input also yields nullopt with *unknown = true.
std::optional<std::vector<int64_t>> axes_for_cpu(const CpuContext& ctx, const char* attr, size_t input_index);
std::optional<std::vector<int64_t>> axes_for_infer(const ShapeContext& ctx, const char* attr, size_t input_index,
                                                   bool* unknown);

// Normalises every axis against rank (negative allowed); throws naming the node on out-of-range or repeated axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const ir::Node& node);

// out (contiguous, shape out_shape) = in[in_base + sum_d idx_d * in_strides[d]] for elements of elem_size bytes.
// Strides may be negative or zero. Rows whose input stride is 1 are copied with memcpy; big outputs use OpenMP.
void strided_copy(const void* in, void* out, size_t elem_size, const Shape& out_shape,
                  const std::vector<int64_t>& in_strides, int64_t in_base);

// Shape-function setters: output i of dtype with the given dims, or with unknown rank.
inline void set_output_type(ShapeContext& ctx, size_t i, DType dtype, std::optional<ir::SymShape> shape) {
  if (shape)
    ctx.set_output(i, dtype, std::move(*shape));
  else
    ctx.set_output_rank_unknown(i, dtype);
}
// Shape of input i, or nullopt when its rank is unknown.
std::optional<ir::SymShape> input_shape(const ShapeContext& ctx, size_t i);

}  // namespace kilnrt::ops
