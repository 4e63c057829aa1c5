// Indexing and layout ops: GatherND, ScatterND, ScatterElements (and Scatter, its opset 9-10 name), NonZero,
// Compress, OneHot, EyeLike, DepthToSpace, SpaceToDepth. Element copies are dtype-agnostic (memcpy of
// dtype_size bytes); scatter reductions compute in double.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"
#include "ops/shape/shape_util.h"

namespace kilnrt::ops {
namespace {

const std::vector<DType> kAny = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
                                 DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};

int64_t wrap_index(int64_t i, int64_t dim, const ir::Node& node) {
  const int64_t j = i < 0 ? i + dim : i;
  KILNRT_CHECK(j >= 0 && j < dim, kInvalidArgument, node.describe(),
               node.op_type << ": index " << i << " is out of range for a dim of size " << dim);
  return j;
}

ir::SymShape dims_of(const Shape& s) {
  ir::SymShape out;
  for (int64_t d : s) out.push_back(ir::Dim(d));
  return out;
}

// ---- GatherND ---------------------------------------------------------------------------------------------------
void gather_nd_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  const std::vector<int64_t> idx = read_int_input(ctx, 1);
  // (fuzz finding: rank-0 indices read dim(-1) of an empty shape; an index depth of 0 divided by zero below)
  KILNRT_CHECK(ind.rank() >= 1 && ind.dim(-1) >= 1, kInvalidModel, ctx.node.describe(),
               "GatherND indices need rank >= 1 and a last dimension >= 1, got " << shape_to_string(ind.shape()));
  const int64_t k = ind.dim(-1);
  KILNRT_CHECK(b >= 0 && b + k <= x.rank() && b < ind.rank(), kInvalidModel, ctx.node.describe(),
               "GatherND: batch_dims " << b << " and index depth " << k << " do not fit data rank " << x.rank());
  Shape out_shape(ind.shape().begin(), ind.shape().end() - 1);
  for (int d = static_cast<int>(b + k); d < x.rank(); ++d) out_shape.push_back(x.dim(d));
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t batch = 1, slice = 1;
  for (int d = 0; d < b; ++d) batch *= x.dim(d);
  for (int d = static_cast<int>(b + k); d < x.rank(); ++d) slice *= x.dim(d);
  const int64_t per_batch = batch == 0 ? 0 : static_cast<int64_t>(idx.size() / k) / batch;
  const int64_t batch_stride = b == 0 ? 0 : xs[b - 1];
  const size_t es = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t j = 0; j < per_batch; ++j) {
      const int64_t* t = &idx[(bi * per_batch + j) * k];
      int64_t off = bi * batch_stride;
      for (int64_t q = 0; q < k; ++q) off += wrap_index(t[q], x.dim(static_cast<int>(b + q)), ctx.node) * xs[b + q];
      std::memcpy(dst + (bi * per_batch + j) * slice * es, src + off * es, slice * es);
    }
  }
  ctx.outputs[0] = y;
}

void gather_nd_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& ind = ctx.input(1);
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  if (!x.has_shape || !ind.has_shape || ind.shape.empty() || !ind.shape.back().known()) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t k = ind.shape.back().value;
  ir::SymShape out(ind.shape.begin(), ind.shape.end() - 1);
  for (size_t d = static_cast<size_t>(b + k); d < x.shape.size(); ++d) out.push_back(x.shape[d]);
  ctx.set_output(0, x.dtype, out);
}

// ---- scatter (ScatterND, ScatterElements) ---------------------------------------------------------------------
double reduce_one(const std::string& r, double a, double b) {
  if (r == "add") return a + b;
  if (r == "mul") return a * b;
  if (r == "max") return std::max(a, b);
  if (r == "min") return std::min(a, b);
  return b;
}

// Writes updates into a copy of data at element offsets `offs` (one per update slice of `slice` elements).
Tensor scatter_into(const CpuContext& ctx, const std::vector<int64_t>& offs, int64_t slice) {
  const Tensor& x = ctx.input(0);
  const Tensor& upd = ctx.input(2);
  const std::string r = ctx.node.attr_string("reduction", "none");
  // Hostile models (fuzz finding, 2026-11-22): updates smaller than the indices address were read past their end.
  KILNRT_CHECK(slice >= 0 && upd.numel() == static_cast<int64_t>(offs.size()) * slice, kInvalidArgument,
               ctx.node.describe(),
               ctx.node.op_type << ": updates has " << upd.numel() << " elements, the indices address " << offs.size()
                                << " slices of " << slice);
  Tensor y = Tensor::from_data(x.raw(), x.dtype(), x.shape());
  if (r == "none") {
    const size_t es = dtype_size(x.dtype());
    for (size_t i = 0; i < offs.size(); ++i)
      std::memcpy(static_cast<char*>(y.raw()) + offs[i] * es, static_cast<const char*>(upd.raw()) + i * slice * es,
                  slice * es);
    return y;
  }
  KILNRT_CHECK(r == "add" || r == "mul" || r == "max" || r == "min", kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": unknown reduction '" << r << "'");
  std::vector<double> v = tensor_to_doubles(x, ctx.node), u = tensor_to_doubles(upd, ctx.node);
  for (size_t i = 0; i < offs.size(); ++i)
    for (int64_t j = 0; j < slice; ++j) v[offs[i] + j] = reduce_one(r, v[offs[i] + j], u[i * slice + j]);
  return tensor_from_doubles(v, x.dtype(), x.shape());
}

void scatter_nd_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const std::vector<int64_t> idx = read_int_input(ctx, 1);
  const int64_t k = ind.dim(-1);
  KILNRT_CHECK(k <= x.rank(), kInvalidModel, ctx.node.describe(), "ScatterND: index depth exceeds data rank");
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t slice = 1;
  for (int d = static_cast<int>(k); d < x.rank(); ++d) slice *= x.dim(d);
  std::vector<int64_t> offs;
  for (size_t i = 0; i + k <= idx.size() && k > 0; i += k) {
    int64_t off = 0;
    for (int64_t q = 0; q < k; ++q) off += wrap_index(idx[i + q], x.dim(static_cast<int>(q)), ctx.node) * xs[q];
    offs.push_back(off);
  }
  ctx.outputs[0] = scatter_into(ctx, offs, slice);
}

void scatter_elements_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  KILNRT_CHECK(ind.rank() == x.rank(), kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": indices rank differs from data rank");
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), x.rank(), ctx.node);
  for (int d = 0; d < x.rank(); ++d)
    KILNRT_CHECK(
        d == axis || ind.dim(d) <= x.dim(d), kInvalidArgument, ctx.node.describe(),
        ctx.node.op_type << ": indices dim " << d << " (" << ind.dim(d) << ") exceeds data's (" << x.dim(d) << ")");
  const std::vector<int64_t> idx = read_int_input(ctx, 1);
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::vector<int64_t> offs(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), off = 0;
    for (int d = ind.rank() - 1; d >= 0; --d) {
      const int64_t c = rem % ind.dim(d);
      rem /= ind.dim(d);
      off += (d == axis ? wrap_index(idx[i], x.dim(d), ctx.node) : c) * xs[d];
    }
    offs[i] = off;
  }
  ctx.outputs[0] = scatter_into(ctx, offs, 1);
}

void same_as_data(ShapeContext& ctx) { set_output_type(ctx, 0, ctx.input(0).dtype, input_shape(ctx, 0)); }

// ---- NonZero, Compress ------------------------------------------------------------------------------------------
void nonzero_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> v = tensor_to_doubles(x, ctx.node);
  std::vector<int64_t> hits;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0.0) hits.push_back(static_cast<int64_t>(i));
  const int rank = std::max(x.rank(), 1);
  const int64_t n = static_cast<int64_t>(hits.size());
  Tensor y = Tensor::empty(DType::kInt64, {rank, n});
  int64_t* out = y.data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = hits[j];
    for (int d = x.rank() - 1; d >= 0; --d) {
      out[d * n + j] = rem % x.dim(d);
      rem /= x.dim(d);
    }
    if (x.rank() == 0) out[j] = 0;
  }
  ctx.outputs[0] = y;
}

void compress_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> cond = tensor_to_doubles(ctx.input(1), ctx.node);
  const bool flat = !ctx.node.has_attr("axis");
  const Shape shape = flat ? Shape{x.numel()} : x.shape();
  const int64_t axis = flat ? 0 : normalize_axis(ctx.node.attr_int("axis"), x.rank(), ctx.node);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < shape[axis] && i < static_cast<int64_t>(cond.size()); ++i)
    if (cond[i] != 0.0) keep.push_back(i);
  Shape out_shape = shape;
  out_shape[axis] = static_cast<int64_t>(keep.size());
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  const size_t es = dtype_size(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < keep.size(); ++j)
      std::memcpy(static_cast<char*>(y.raw()) + ((o * keep.size() + j) * inner) * es,
                  static_cast<const char*>(x.raw()) + ((o * shape[axis] + keep[j]) * inner) * es, inner * es);
  ctx.outputs[0] = y;
}

// ---- OneHot, EyeLike ------------------------------------------------------------------------------------------
void onehot_cpu(CpuContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const std::vector<double> idx = tensor_to_doubles(ind, ctx.node);
  const int64_t depth = static_cast<int64_t>(tensor_to_doubles(ctx.input(1), ctx.node).at(0));
  const Tensor& vals = ctx.input(2);
  const std::vector<double> v = tensor_to_doubles(vals, ctx.node);
  const int64_t rank = ind.rank() + 1;
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
  Shape out_shape = ind.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[d];
  std::vector<double> out(static_cast<size_t>(outer * depth * inner), v.at(0));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t k = static_cast<int64_t>(idx[o * inner + i]);
      if (k < 0) k += depth;
      if (k >= 0 && k < depth) out[(o * depth + k) * inner + i] = v.at(1);
    }
  ctx.outputs[0] = tensor_from_doubles(out, vals.dtype(), out_shape);
}

DType eyelike_dtype(const ir::Node& node, DType input) {
  return node.has_attr("dtype") ? static_cast<DType>(node.attr_int("dtype")) : input;
}

void eyelike_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() == 2, kInvalidArgument, ctx.node.describe(), "EyeLike: input must be 2-D");
  const int64_t k = ctx.node.attr_int("k", 0);
  std::vector<double> out(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t i = 0; i < x.dim(0); ++i)
    if (i + k >= 0 && i + k < x.dim(1)) out[i * x.dim(1) + i + k] = 1.0;
  ctx.outputs[0] = tensor_from_doubles(out, eyelike_dtype(ctx.node, x.dtype()), x.shape());
}

// ---- DepthToSpace, SpaceToDepth --------------------------------------------------------------------------------
// Both are a reshape to 6-D, a transpose and a reshape back: done as one strided copy. DepthToSpace has a mode
// (DCR, the default, or CRD); newer SpaceToDepth definitions have one too (onnx 1.23's test data:
// test_spacetodepth_crd_mode_example): without it, or with DCR, the original layout.
int64_t depth_space_blocksize(const ir::Node& node) {
  const int64_t bs = node.attr_int("blocksize");
  KILNRT_CHECK(bs >= 1, kInvalidModel, node.describe(), node.op_type << ": blocksize must be >= 1, got " << bs);
  return bs;
}

bool depth_to_space_crd(const ir::Node& node) {
  const std::string mode = node.attr_string("mode", "DCR");
  KILNRT_CHECK(mode == "DCR" || mode == "CRD", kInvalidModel, node.describe(),
               node.op_type << ": mode must be DCR or CRD, got '" << mode << "'");
  return mode == "CRD";
}

void depth_space_cpu(CpuContext& ctx, bool to_space) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() == 4, kInvalidArgument, ctx.node.describe(), ctx.node.op_type << ": input must be 4-D");
  const int64_t bs = depth_space_blocksize(ctx.node);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const bool crd = depth_to_space_crd(ctx.node);
  Shape in6, perm_shape;
  std::vector<int64_t> perm;
  Shape out_shape;
  if (to_space) {
    KILNRT_CHECK(c % (bs * bs) == 0, kInvalidArgument, ctx.node.describe(), "DepthToSpace: C not divisible");
    const int64_t oc = c / (bs * bs);
    in6 = crd ? Shape{n, oc, bs, bs, h, w} : Shape{n, bs, bs, oc, h, w};
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    out_shape = {n, oc, h * bs, w * bs};
  } else {
    KILNRT_CHECK(h % bs == 0 && w % bs == 0, kInvalidArgument, ctx.node.describe(), "SpaceToDepth: H/W not divisible");
    in6 = {n, c, h / bs, bs, w / bs, bs};
    // DCR: output channel = (row * bs + col) * C + c; CRD: c * bs * bs + row * bs + col.
    perm = crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    out_shape = {n, c * bs * bs, h / bs, w / bs};
  }
  const std::vector<int64_t> s6 = contiguous_strides(in6);
  Shape t_shape;
  std::vector<int64_t> t_strides;
  for (int64_t p : perm) {
    t_shape.push_back(in6[p]);
    t_strides.push_back(s6[p]);
  }
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  strided_copy(x.raw(), y.raw(), dtype_size(x.dtype()), t_shape, t_strides, 0);
  ctx.outputs[0] = y;
}

void depth_space_infer(ShapeContext& ctx, bool to_space) {
  const ir::TensorType& x = ctx.input(0);
  const int64_t bs = depth_space_blocksize(ctx.node);
  depth_to_space_crd(ctx.node);  // validates the mode
  if (!x.has_shape || x.shape.size() != 4) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  auto scale = [](const ir::Dim& d, int64_t mul, int64_t div) {
    return d.known() ? ir::Dim(d.value * mul / div) : ir::Dim();
  };
  ir::SymShape out = x.shape;
  if (to_space) {
    out[1] = scale(x.shape[1], 1, bs * bs), out[2] = scale(x.shape[2], bs, 1), out[3] = scale(x.shape[3], bs, 1);
  } else {
    out[1] = scale(x.shape[1], bs * bs, 1), out[2] = scale(x.shape[2], 1, bs), out[3] = scale(x.shape[3], 1, bs);
  }
  ctx.set_output(0, x.dtype, out);
}

OpSchema make(const char* op, int since, ShapeFn infer, CpuKernelFn cpu, const char* doc) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.infer = std::move(infer);
  s.cpu = std::move(cpu);
  s.dtypes = kAny;
  s.doc = doc;
  return s;
}

KILNRT_REGISTER_OP(make("GatherND", 11, gather_nd_infer, gather_nd_cpu, "gathers slices by index tuples (batch_dims)"));
KILNRT_REGISTER_OP(make("ScatterND", 11, same_as_data, scatter_nd_cpu,
                        "copy of data with slices at index tuples replaced / reduced (add, mul, max, min)"));
KILNRT_REGISTER_OP(make("ScatterElements", 11, same_as_data, scatter_elements_cpu,
                        "copy of data with elements at indices along axis replaced / reduced"));
KILNRT_REGISTER_OP(make("Scatter", 9, same_as_data, scatter_elements_cpu, "ScatterElements under its opset 9-10 name"));
KILNRT_REGISTER_OP(make(
    "NonZero", 9,
    [](ShapeContext& ctx) {
      const ir::TensorType& x = ctx.input(0);
      if (!x.has_shape) return ctx.set_output_rank_unknown(0, DType::kInt64);
      ctx.set_output(0, DType::kInt64, ir::SymShape{ir::Dim(std::max<int64_t>(x.shape.size(), 1)), ir::Dim()});
    },
    nonzero_cpu, "indices of the non-zero elements, (rank, count)"));
KILNRT_REGISTER_OP(make(
    "Compress", 9,
    [](ShapeContext& ctx) {
      const ir::TensorType& x = ctx.input(0);
      if (!ctx.node.has_attr("axis")) return ctx.set_output(0, x.dtype, ir::SymShape{ir::Dim()});
      if (!x.has_shape) return ctx.set_output_rank_unknown(0, x.dtype);
      ir::SymShape out = x.shape;
      out[normalize_axis(ctx.node.attr_int("axis"), static_cast<int64_t>(out.size()), ctx.node)] = ir::Dim();
      ctx.set_output(0, x.dtype, out);
    },
    compress_cpu, "slices along axis (or elements of the flattened input) where condition is true"));
KILNRT_REGISTER_OP(make(
    "OneHot", 9,
    [](ShapeContext& ctx) {
      const ir::TensorType& ind = ctx.input(0);
      const DType dt = ctx.input(2).dtype;
      if (!ind.has_shape) return ctx.set_output_rank_unknown(0, dt);
      ir::SymShape out = ind.shape;
      const int64_t axis =
          normalize_axis(ctx.node.attr_int("axis", -1), static_cast<int64_t>(out.size()) + 1, ctx.node);
      ir::Dim depth;
      if (const Tensor* d = ctx.value(1)) depth = ir::Dim(static_cast<int64_t>(tensor_to_doubles(*d, ctx.node).at(0)));
      out.insert(out.begin() + axis, depth);
      ctx.set_output(0, dt, out);
    },
    onehot_cpu, "one-hot encoding of indices with depth and [off, on] values along axis"));
KILNRT_REGISTER_OP(make(
    "EyeLike", 9,
    [](ShapeContext& ctx) {
      const ir::TensorType& x = ctx.input(0);
      set_output_type(ctx, 0, eyelike_dtype(ctx.node, x.dtype), input_shape(ctx, 0));
    },
    eyelike_cpu, "2-D identity (diagonal k) shaped like the input"));
KILNRT_REGISTER_OP(make(
    "DepthToSpace", 1, [](ShapeContext& c) { depth_space_infer(c, true); },
    [](CpuContext& c) { depth_space_cpu(c, true); }, "rearranges depth into blocks (DCR / CRD)"));
KILNRT_REGISTER_OP(make(
    "SpaceToDepth", 1, [](ShapeContext& c) { depth_space_infer(c, false); },
    [](CpuContext& c) { depth_space_cpu(c, false); }, "rearranges blocks into depth"));

}  // namespace
}  // namespace kilnrt::ops
