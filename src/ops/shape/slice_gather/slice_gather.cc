// Slice (starts/ends/axes/steps as attributes before opset 10, inputs after), Gather, GatherElements.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "ops/math/elementwise.h"
#include "ops/shape/shape_util.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

const std::vector<DType> kAllDTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                       DType::kFloat64, DType::kInt64,   DType::kInt32,
                                       DType::kInt8,    DType::kUInt8,   DType::kBool};

// ---- Slice --------------------------------------------------------------------------------------------------
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

// One axis of a slice, clamped like ONNX: returns the first index and the number of elements taken.
struct AxisSlice {
  int64_t start = 0, step = 1, count = 0;
};

AxisSlice clamp_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  AxisSlice r;
  r.step = step;
  if (dim == 0) return r;
  if (start < 0) start = start < -dim ? 0 : start + dim;  // written to avoid overflow for INT64_MIN
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > start ? 1 + (end - start - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -step may overflow for INT64_MIN: divide by the magnitude without negating it.
    r.count = start > end
                  ? 1 + (start - end - 1) /
                            (step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step)
                  : 0;
  }
  r.start = r.count > 0 ? start : 0;
  return r;
}

// Reads and checks the slice parameters; `n_axes_of` is the input's rank.
void check_slice_params(SliceParams& p, int64_t rank, const ir::Node& node) {
  KILNRT_CHECK(p.starts.size() == p.ends.size(), kInvalidModel, node.describe(),
               "Slice: starts has " << p.starts.size() << " entries, ends " << p.ends.size());
  if (p.axes.empty())
    for (size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
  if (p.steps.empty()) p.steps.assign(p.starts.size(), 1);
  KILNRT_CHECK(p.axes.size() == p.starts.size() && p.steps.size() == p.starts.size(), kInvalidModel, node.describe(),
               "Slice: starts, ends, axes and steps must have the same length");
  p.axes = normalize_axes(p.axes, rank, node);
  for (int64_t s : p.steps) KILNRT_CHECK(s != 0, kInvalidModel, node.describe(), "Slice: step is 0");
}

void slice_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  SliceParams p;
  if (ctx.node.has_attr("starts")) {  // opset < 10
    p.starts = ctx.node.attr_ints("starts");
    p.ends = ctx.node.attr_ints("ends");
    p.axes = ctx.node.attr_ints("axes", std::vector<int64_t>{});
  } else {
    p.starts = read_int_input(ctx, 1);
    p.ends = read_int_input(ctx, 2);
    if (ctx.has_input(3)) p.axes = read_int_input(ctx, 3);
    if (ctx.has_input(4)) p.steps = read_int_input(ctx, 4);
  }
  check_slice_params(p, x.rank(), ctx.node);
  Shape out_shape = x.shape();
  std::vector<int64_t> strides = contiguous_strides(x.shape());
  std::vector<int64_t> in_strides = strides;
  int64_t base = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    int64_t a = p.axes[i];
    AxisSlice s = clamp_slice(p.starts[i], p.ends[i], p.steps[i], x.shape()[a]);
    out_shape[a] = s.count;
    in_strides[a] = strides[a] * s.step;
    base += s.start * strides[a];
  }
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  strided_copy(x.raw(), y.raw(), dtype_size(x.dtype()), out_shape, in_strides, base);
  ctx.outputs[0] = y;
}

void slice_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  SliceParams p;
  bool known = true;
  if (ctx.node.has_attr("starts")) {
    p.starts = ctx.node.attr_ints("starts");
    p.ends = ctx.node.attr_ints("ends");
    p.axes = ctx.node.attr_ints("axes", std::vector<int64_t>{});
  } else {
    auto get = [&](size_t i, std::vector<int64_t>* out) {
      if (!ctx.has_input(i)) return;
      auto v = input_known_ints(ctx, i);
      if (v)
        *out = *v;
      else
        known = false;
    };
    get(1, &p.starts);
    get(2, &p.ends);
    get(3, &p.axes);
    get(4, &p.steps);
  }
  if (!known) {
    // Which axes are sliced is unknown: only the rank survives (unless the axes are known).
    ir::SymShape out(static_cast<size_t>(rank));
    if (!p.axes.empty() && (!ctx.has_input(3) || input_known_ints(ctx, 3))) {
      std::vector<int64_t> axes = normalize_axes(p.axes, rank, ctx.node);
      out = x.shape;
      for (int64_t a : axes) out[a] = ir::Dim();
    }
    ctx.set_output(0, x.dtype, out);
    return;
  }
  check_slice_params(p, rank, ctx.node);
  ir::SymShape out = x.shape;
  constexpr int64_t kBig = std::numeric_limits<int32_t>::max();
  std::vector<AxisSlice> axis_slices;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const ir::Dim& d = x.shape[p.axes[i]];
    if (d.known()) {
      AxisSlice s = clamp_slice(p.starts[i], p.ends[i], p.steps[i], d.value);
      out[p.axes[i]] = ir::Dim(s.count);
      axis_slices.push_back(s);
    } else {
      bool whole = p.steps[i] == 1 && p.starts[i] == 0 && p.ends[i] >= kBig;
      out[p.axes[i]] = whole ? d : ir::Dim();
    }
  }
  ctx.set_output(0, x.dtype, out);
  // Sym values of a 1-D shape tensor: slice the element list.
  auto v = input_sym_ints(ctx, 0);
  if (v && rank == 1 && p.axes.size() == 1 && x.shape[0].known() && axis_slices.size() == 1) {
    SymInts sliced;
    const AxisSlice& s = axis_slices[0];
    for (int64_t k = 0; k < s.count; ++k) sliced.push_back((*v)[static_cast<size_t>(s.start + k * s.step)]);
    set_output_sym_ints(ctx, 0, sliced);
  }
}

OpSchema slice_schema() {
  OpSchema s;
  s.op_type = "Slice";
  s.since_version = 1;
  s.infer = slice_infer;
  s.cpu = slice_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "strided slice (negative / out-of-range starts and ends clamp, negative steps)";
  return s;
}
KILNRT_REGISTER_OP(slice_schema());

// ---- Gather -------------------------------------------------------------------------------------------------
// Indices as int64, negative ones wrapped, each checked against dim.
std::vector<int64_t> checked_indices(const CpuContext& ctx, size_t input, int64_t dim) {
  std::vector<int64_t> idx = read_int_input(ctx, input);
  for (int64_t& i : idx) {
    KILNRT_CHECK(i >= -dim && i < dim, kInvalidArgument, ctx.node.describe(),
                 ctx.node.op_type << ": index " << i << " is out of range for a dim of size " << dim);
    if (i < 0) i += dim;
  }
  return idx;
}

void gather_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  KILNRT_CHECK(x.rank() >= 1, kInvalidModel, ctx.node.describe(), "Gather: data must have rank >= 1");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  const int64_t dim = x.shape()[axis];
  std::vector<int64_t> idx = checked_indices(ctx, 1, dim);
  Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
  out_shape.insert(out_shape.end(), ind.shape().begin(), ind.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const int64_t n = static_cast<int64_t>(idx.size());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  const int64_t tasks = outer * n;
  const bool parallel = y.numel() >= kParallelThreshold && tasks > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t o = t / n, j = t % n;
    std::memcpy(dst + static_cast<size_t>(t) * block, src + static_cast<size_t>(o * dim + idx[j]) * block, block);
  }
  ctx.outputs[0] = y;
}

void gather_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  auto ind_shape = input_shape(ctx, 1);
  if (!x.has_shape || !ind_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KILNRT_CHECK(rank >= 1, kInvalidModel, ctx.node.describe(), "Gather: data must have rank >= 1");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  ir::SymShape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ind_shape->begin(), ind_shape->end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  ctx.set_output(0, x.dtype, out);
  // Shape values: Gather(Shape(x), const indices).
  auto v = input_sym_ints(ctx, 0);
  auto idx = input_known_ints(ctx, 1);
  if (v && idx && rank == 1) {
    const int64_t n = static_cast<int64_t>(v->size());
    SymInts picked;
    for (int64_t i : *idx) {
      KILNRT_CHECK(i >= -n && i < n, kInvalidModel, ctx.node.describe(),
                   "Gather: index " << i << " is out of range for a dim of size " << n);
      picked.push_back((*v)[static_cast<size_t>(i < 0 ? i + n : i)]);
    }
    set_output_sym_ints(ctx, 0, picked);
  }
}

OpSchema gather_schema() {
  OpSchema s;
  s.op_type = "Gather";
  s.since_version = 1;
  s.infer = gather_infer;
  s.cpu = gather_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "takes slices along axis at the given (possibly negative) indices";
  return s;
}
KILNRT_REGISTER_OP(gather_schema());

// ---- GatherElements -----------------------------------------------------------------------------------------
void gather_elements_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  KILNRT_CHECK(x.rank() == ind.rank(), kInvalidModel, ctx.node.describe(),
               "GatherElements: data rank " << x.rank() << " != indices rank " << ind.rank());
  const int rank = x.rank();
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  for (int d = 0; d < rank; ++d)
    KILNRT_CHECK(d == axis || ind.shape()[d] <= x.shape()[d], kInvalidModel, ctx.node.describe(),
                 "GatherElements: indices shape " << shape_to_string(ind.shape()) << " exceeds data shape "
                                                  << shape_to_string(x.shape()) << " at dim " << d);
  std::vector<int64_t> idx = checked_indices(ctx, 1, x.shape()[axis]);
  Tensor y = Tensor::empty(x.dtype(), ind.shape());
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  const Shape& is = ind.shape();
  dispatch_by_size(dtype_size(x.dtype()), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t n = y.numel();
    parallel_for_range(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t rem = i, off = 0;
        for (int d = rank - 1; d >= 0; --d) {
          int64_t c = rem % is[d];
          rem /= is[d];
          off += (d == axis ? idx[i] : c) * xs[d];
        }
        out[i] = in[off];
      }
    });
  });
  ctx.outputs[0] = y;
}

OpSchema gather_elements_schema() {
  OpSchema s;
  s.op_type = "GatherElements";
  s.since_version = 11;
  s.infer = [](ShapeContext& ctx) {
    const ir::TensorType& x = ctx.input(0);
    set_output_type(ctx, 0, x.dtype, input_shape(ctx, 1));
  };
  s.cpu = gather_elements_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "out[i][j][k] = data[index[i][j][k]][j][k] (for axis 0)";
  return s;
}
KILNRT_REGISTER_OP(gather_elements_schema());

}  // namespace
}  // namespace kilnrt::ops
