// Concat and Split (split sizes as attribute before opset 13, as input after; num_outputs from opset 18).
#include <cstring>
#include <string>

#include "ops/math/elementwise.h"
#include "ops/shape/shape_util.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

const std::vector<DType> kAllDTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                       DType::kFloat64, DType::kInt64,   DType::kInt32,
                                       DType::kInt8,    DType::kUInt8,   DType::kBool};

// Prefers a known dim, then a named one.
ir::Dim merge_dim(const ir::Dim& a, const ir::Dim& b) {
  if (a.known()) return a;
  if (b.known()) return b;
  return a.param.empty() ? b : a;
}

// ---- Concat -------------------------------------------------------------------------------------------------
void concat_infer(ShapeContext& ctx) {
  const ir::TensorType& first = ctx.input(0);
  std::optional<ir::SymShape> out;
  SymInt total = SymInt::of(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    auto s = input_shape(ctx, i);
    if (!s) {
      ctx.set_output_rank_unknown(0, first.dtype);
      return;
    }
    const int64_t rank = static_cast<int64_t>(s->size());
    // (fuzz finding: a rank-0 input indexed its empty shape at the axis)
    KILNRT_CHECK(rank >= 1, kInvalidModel, ctx.node.describe(), "Concat: input " << i << " is a scalar (rank 0)");
    int64_t axis = normalize_axis(ctx.node.attr_int("axis"), rank, ctx.node);
    if (!out) {
      out = *s;
    } else {
      KILNRT_CHECK(out->size() == s->size(), kInvalidModel, ctx.node.describe(),
                   "Concat: input " << i << " has rank " << rank << ", input 0 has rank " << out->size());
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis) (*out)[d] = merge_dim((*out)[d], (*s)[d]);
    }
    total = sym_binary('+', total, shape_dim_to_sym_int((*s)[axis]));
  }
  int64_t axis = normalize_axis(ctx.node.attr_int("axis"), static_cast<int64_t>(out->size()), ctx.node);
  (*out)[axis] = sym_int_to_shape_dim(total);
  ctx.set_output(0, first.dtype, *out);
  // Shape values: concatenation of 1-D element lists.
  if (out->size() != 1) return;
  SymInts values;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    auto v = input_sym_ints(ctx, i);
    if (!v) return;
    values.insert(values.end(), v->begin(), v->end());
  }
  set_output_sym_ints(ctx, 0, values);
}

void concat_cpu(CpuContext& ctx) {
  check_same_dtypes(ctx);
  const Tensor& first = ctx.input(0);
  const int rank = first.rank();
  KILNRT_CHECK(rank >= 1, kInvalidArgument, ctx.node.describe(), "Concat: input 0 is a scalar (rank 0)");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis"), rank, ctx.node);
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    KILNRT_CHECK(t.rank() == rank, kInvalidArgument, ctx.node.describe(),
                 "Concat: input " << i << " has shape " << shape_to_string(t.shape()) << ", input 0 "
                                  << shape_to_string(first.shape()));
    for (int d = 0; d < rank; ++d)
      KILNRT_CHECK(d == axis || t.shape()[d] == first.shape()[d], kInvalidArgument, ctx.node.describe(),
                   "Concat: input " << i << " has shape " << shape_to_string(t.shape()) << ", input 0 "
                                    << shape_to_string(first.shape()) << " (differs at dim " << d << ")");
    out_shape[axis] += t.shape()[axis];
  }
  Tensor y = Tensor::empty(first.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[d];
  const size_t es = dtype_size(first.dtype());
  const size_t out_row = static_cast<size_t>(out_shape[axis] * inner) * es;
  char* dst = static_cast<char*>(y.raw());
  size_t col = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    const size_t in_row = static_cast<size_t>(t.shape()[axis] * inner) * es;
    const char* src = static_cast<const char*>(t.raw());
    if (in_row > 0) {
      const bool parallel = t.numel() >= kParallelThreshold && outer > 1;
#pragma omp parallel for schedule(static) if (parallel)
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * out_row + col, src + o * in_row, in_row);
    }
    col += in_row;
  }
  ctx.outputs[0] = y;
}

OpSchema concat_schema() {
  OpSchema s;
  s.op_type = "Concat";
  s.since_version = 4;
  s.infer = concat_infer;
  s.cpu = concat_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "joins inputs along axis";
  return s;
}
KILNRT_REGISTER_OP(concat_schema());

// ---- Split --------------------------------------------------------------------------------------------------
// Sizes of the outputs along the axis for a dim of size `dim`.
std::vector<int64_t> split_sizes(const ir::Node& node, std::optional<std::vector<int64_t>> split, int64_t dim,
                                 size_t n_outputs) {
  if (split && !split->empty()) {
    KILNRT_CHECK(split->size() == n_outputs, kInvalidModel, node.describe(),
                 "Split: " << split->size() << " split sizes for " << n_outputs << " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      KILNRT_CHECK(s >= 0, kInvalidModel, node.describe(), "Split: negative split size " << s);
      sum += s;
    }
    KILNRT_CHECK(sum == dim, kInvalidArgument, node.describe(),
                 "Split: split sizes sum to " << sum << " but the dim has size " << dim);
    return *split;
  }
  const int64_t n = static_cast<int64_t>(n_outputs);
  if (node.has_attr("num_outputs")) {  // opset 18: ceil-sized chunks, the last one smaller
    int64_t chunk = (dim + n - 1) / n;
    std::vector<int64_t> sizes;
    int64_t left = dim;
    for (int64_t i = 0; i < n; ++i) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
    return sizes;
  }
  KILNRT_CHECK(dim % n == 0, kInvalidArgument, node.describe(),
               "Split: a dim of size " << dim << " does not split evenly into " << n << " outputs");
  return std::vector<int64_t>(n_outputs, dim / n);
}

void split_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  std::optional<std::vector<int64_t>> split;
  if (ctx.node.has_attr("split"))
    split = ctx.node.attr_ints("split");
  else if (ctx.has_input(1))
    split = read_int_input(ctx, 1);
  std::vector<int64_t> sizes = split_sizes(ctx.node, split, x.shape()[axis], ctx.node.outputs.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const size_t es = dtype_size(x.dtype());
  const size_t in_row = static_cast<size_t>(x.shape()[axis] * inner) * es;
  const char* src = static_cast<const char*>(x.raw());
  size_t col = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape shape = x.shape();
    shape[axis] = sizes[i];
    Tensor y = Tensor::empty(x.dtype(), shape);
    const size_t out_row = static_cast<size_t>(sizes[i] * inner) * es;
    char* dst = static_cast<char*>(y.raw());
    if (out_row > 0)
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * out_row, src + o * in_row + col, out_row);
    col += out_row;
    if (ctx.wants_output(i)) ctx.outputs[i] = y;
  }
}

void split_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const size_t n = ctx.outputs.size();
  if (!x.has_shape) {
    for (size_t i = 0; i < n; ++i) ctx.set_output_rank_unknown(i, x.dtype);
    return;
  }
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()), ctx.node);
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (ctx.node.has_attr("split")) {
    split = ctx.node.attr_ints("split");
  } else if (ctx.has_input(1)) {
    split = input_known_ints(ctx, 1);
    split_unknown = !split;
  }
  const ir::Dim& d = x.shape[axis];
  std::vector<ir::Dim> sizes(n);
  if (split && !split->empty()) {
    KILNRT_CHECK(split->size() == n, kInvalidModel, ctx.node.describe(),
                 "Split: " << split->size() << " split sizes for " << n << " outputs");
    for (size_t i = 0; i < n; ++i) sizes[i] = ir::Dim((*split)[i]);
  } else if (d.known() && !split_unknown) {
    std::vector<int64_t> s = split_sizes(ctx.node, std::nullopt, d.value, n);
    for (size_t i = 0; i < n; ++i) sizes[i] = ir::Dim(s[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    ir::SymShape shape = x.shape;
    shape[axis] = sizes[i];
    ctx.set_output(i, x.dtype, shape);
  }
}

OpSchema split_schema() {
  OpSchema s;
  s.op_type = "Split";
  s.since_version = 2;
  s.infer = split_infer;
  s.cpu = split_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "splits along axis into pieces (split sizes, num_outputs or equal parts)";
  return s;
}
KILNRT_REGISTER_OP(split_schema());

}  // namespace
}  // namespace kilnrt::ops
