// Pad (constant / reflect / edge / wrap; pads as attribute before opset 11, as input after; axes from opset 18),
// Tile and Trilu.
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

// ---- Pad ----------------------------------------------------------------------------------------------------
enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode pad_mode(const ir::Node& node) {
  std::string m = node.attr_string("mode", std::string("constant"));
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  KILNRT_THROW(kUnsupported, node.describe(), "Pad: mode '" << m << "' is not supported");
}

// Full per-dim pads [begin..., end...] for rank dims, from `pads` over `axes` (all dims when empty).
std::vector<int64_t> full_pads(const std::vector<int64_t>& pads, std::vector<int64_t> axes, int64_t rank,
                               const ir::Node& node) {
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  axes = normalize_axes(axes, rank, node);
  KILNRT_CHECK(pads.size() == 2 * axes.size(), kInvalidModel, node.describe(),
               "Pad: " << pads.size() << " pads for " << axes.size() << " axes (need 2 per axis)");
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  const size_t n = axes.size();
  for (size_t i = 0; i < n; ++i) {
    full[axes[i]] = pads[i];
    full[axes[i] + rank] = pads[i + n];
  }
  return full;
}

// Source index for output coordinate `o` along a dim of size `dim`; -1 means "the constant".
inline int64_t pad_source(int64_t o, int64_t begin, int64_t dim, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : dim - 1;
    case PadMode::kWrap: return ((i % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      int64_t r = ((i % period) + period) % period;
      return r < dim ? r : period - r;
    }
  }
  return -1;
}

void pad_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int rank = x.rank();
  PadMode mode = pad_mode(ctx.node);
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  if (ctx.node.has_attr("pads")) {
    pads = ctx.node.attr_ints("pads");
  } else {
    pads = read_int_input(ctx, 1);
    if (ctx.has_input(3)) axes = read_int_input(ctx, 3);
  }
  std::vector<int64_t> full = full_pads(pads, axes, rank, ctx.node);
  Shape out_shape(rank);
  for (int d = 0; d < rank; ++d) {
    out_shape[d] = x.shape()[d] + full[d] + full[d + rank];
    KILNRT_CHECK(out_shape[d] >= 0, kInvalidModel, ctx.node.describe(),
                 "Pad: pads " << shape_to_string(pads) << " make dim " << d << " negative");
    if (mode != PadMode::kConstant && out_shape[d] > 0)
      KILNRT_CHECK(x.shape()[d] > 0, kInvalidArgument, ctx.node.describe(),
                   "Pad: cannot pad an empty dim " << d << " in a non-constant mode");
  }
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  const size_t es = dtype_size(x.dtype());
  // The constant as raw bytes of the dtype (default zero).
  uint64_t constant = 0;
  if (mode == PadMode::kConstant) {
    if (ctx.node.has_attr("value")) {
      float v = ctx.node.attr_float("value");
      dispatch_dtype<DTypeSet::kAll>(x.dtype(), ctx.node.describe(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T tv = Compute<T>::store(static_cast<compute_t<T>>(v));
        std::memcpy(&constant, &tv, sizeof(T));
      });
    } else if (ctx.has_input(2)) {
      const Tensor& c = ctx.input(2);
      KILNRT_CHECK(c.dtype() == x.dtype() && c.numel() == 1, kInvalidModel, ctx.node.describe(),
                   "Pad: constant_value must be one element of the input's dtype");
      std::memcpy(&constant, c.raw(), es);
    }
  }
  if (y.numel() == 0) {
    ctx.outputs[0] = y;
    return;
  }
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  const int64_t row_len = rank > 0 ? out_shape[rank - 1] : 1;
  const int64_t rows = y.numel() / row_len;
  dispatch_by_size(es, ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T cval;
    std::memcpy(&cval, &constant, sizeof(T));
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const bool parallel = y.numel() >= kParallelThreshold && rows > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; ++r) {
      T* dst = out + r * row_len;
      int64_t base = 0;
      bool is_constant_row = false;
      int64_t rem = r;
      for (int d = rank - 2; d >= 0; --d) {
        int64_t o = rem % out_shape[d];
        rem /= out_shape[d];
        int64_t src = pad_source(o, full[d], x.shape()[d], mode);
        if (src < 0) is_constant_row = true;
        base += src * xs[d];
      }
      if (rank == 0) {
        dst[0] = in[0];
        continue;
      }
      if (is_constant_row) {
        for (int64_t j = 0; j < row_len; ++j) dst[j] = cval;
        continue;
      }
      const int64_t dim = x.shape()[rank - 1];
      const int64_t begin = full[rank - 1];
      for (int64_t j = 0; j < row_len; ++j) {
        int64_t src = pad_source(j, begin, dim, mode);
        dst[j] = src < 0 ? cval : in[base + src];
      }
    }
  });
  ctx.outputs[0] = y;
}

void pad_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::optional<std::vector<int64_t>> pads;
  std::vector<int64_t> axes;
  if (ctx.node.has_attr("pads")) {
    pads = ctx.node.attr_ints("pads");
  } else {
    pads = input_known_ints(ctx, 1);
    if (ctx.has_input(3)) {
      auto a = input_known_ints(ctx, 3);
      if (!a)
        pads.reset();
      else
        axes = *a;
    }
  }
  if (!pads) {
    ctx.set_output(0, x.dtype, ir::SymShape(static_cast<size_t>(rank)));
    return;
  }
  std::vector<int64_t> full = full_pads(*pads, axes, rank, ctx.node);
  ir::SymShape out = x.shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t add = full[d] + full[d + rank];
    out[d] = sym_int_to_shape_dim(sym_binary('+', shape_dim_to_sym_int(x.shape[d]), SymInt::of(add)));
  }
  ctx.set_output(0, x.dtype, out);
}

OpSchema pad_schema() {
  OpSchema s;
  s.op_type = "Pad";
  s.since_version = 2;
  s.infer = pad_infer;
  s.cpu = pad_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "pads (or crops, for negative pads) in constant / reflect / edge / wrap mode";
  return s;
}
KILNRT_REGISTER_OP(pad_schema());

// ---- Tile ---------------------------------------------------------------------------------------------------
void tile_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> reps = read_int_input(ctx, 1);
  const int rank = x.rank();
  KILNRT_CHECK(static_cast<int>(reps.size()) == rank, kInvalidModel, ctx.node.describe(),
               "Tile: " << reps.size() << " repeats for an input of rank " << rank);
  Shape out_shape(rank);
  for (int d = 0; d < rank; ++d) {
    KILNRT_CHECK(reps[d] >= 0, kInvalidModel, ctx.node.describe(), "Tile: negative repeat " << reps[d]);
    out_shape[d] = x.shape()[d] * reps[d];
  }
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  dispatch_by_size(dtype_size(x.dtype()), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for_range(y.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        int64_t rem = i, off = 0;
        for (int d = rank - 1; d >= 0; --d) {
          int64_t o = rem % out_shape[d];
          rem /= out_shape[d];
          off += (o % x.shape()[d]) * xs[d];
        }
        out[i] = in[off];
      }
    });
  });
  ctx.outputs[0] = y;
}

void tile_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  auto reps = input_sym_ints(ctx, 1);
  ir::SymShape out(x.shape.size());
  if (reps) {
    KILNRT_CHECK(reps->size() == x.shape.size(), kInvalidModel, ctx.node.describe(),
                 "Tile: " << reps->size() << " repeats for an input of rank " << x.shape.size());
    for (size_t d = 0; d < out.size(); ++d)
      out[d] = sym_int_to_shape_dim(sym_binary('*', shape_dim_to_sym_int(x.shape[d]), (*reps)[d]));
  }
  ctx.set_output(0, x.dtype, out);
}

OpSchema tile_schema() {
  OpSchema s;
  s.op_type = "Tile";
  s.since_version = 6;
  s.infer = tile_infer;
  s.cpu = tile_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "repeats the input along each dim";
  return s;
}
KILNRT_REGISTER_OP(tile_schema());

// ---- Trilu --------------------------------------------------------------------------------------------------
void trilu_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() >= 2, kInvalidModel, ctx.node.describe(), "Trilu: input must have rank >= 2");
  const bool upper = ctx.node.attr_int("upper", 1) != 0;
  const int64_t k = ctx.has_input(1) ? read_int_scalar(ctx, 1) : 0;
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  const size_t es = dtype_size(x.dtype());
  const int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  dispatch_by_size(es, ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t off = (m * rows + i) * cols + j;
          bool keep = upper ? (j - i >= k) : (j - i <= k);
          out[off] = keep ? in[off] : T(0);
        }
  });
  ctx.outputs[0] = y;
}

OpSchema trilu_schema() {
  OpSchema s;
  s.op_type = "Trilu";
  s.since_version = 14;
  s.infer = [](ShapeContext& ctx) {
    const ir::TensorType& x = ctx.input(0);
    set_output_type(ctx, 0, x.dtype, input_shape(ctx, 0));
  };
  s.cpu = trilu_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "upper / lower triangle of the last two dims (diagonal offset k)";
  return s;
}
KILNRT_REGISTER_OP(trilu_schema());

}  // namespace
}  // namespace kilnrt::ops
