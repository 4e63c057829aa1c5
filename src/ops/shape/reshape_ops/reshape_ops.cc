// Reshape, Unsqueeze, Squeeze (views of the input), Expand and Transpose (copies).
#include <algorithm>
#include <set>
#include <string>

#include "ops/math/elementwise.h"
#include "ops/shape/shape_util.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

const std::vector<DType> kAllDTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                       DType::kFloat64, DType::kInt64,   DType::kInt32,
                                       DType::kInt8,    DType::kUInt8,   DType::kBool};

// Sym values pass through ops that only change the shape of a small int tensor (scalar <-> [1], ...).
void pass_sym_value(ShapeContext& ctx) {
  if (auto v = input_sym_ints(ctx, 0)) set_output_sym_ints(ctx, 0, *v);
}

// ---- Reshape ------------------------------------------------------------------------------------------------
Shape reshape_target(const Tensor& x, const std::vector<int64_t>& spec, bool allowzero, const ir::Node& node) {
  Shape out(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      KILNRT_CHECK(infer_at < 0, kInvalidModel, node.describe(),
                   "Reshape: more than one -1 in shape " << shape_to_string(spec));
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (v == 0 && !allowzero) {
      KILNRT_CHECK(static_cast<int>(i) < x.rank(), kInvalidArgument, node.describe(),
                   "Reshape: shape " << shape_to_string(spec) << " copies dim " << i << " (0) but the input has rank "
                                     << x.rank());
      v = x.shape()[i];
    }
    KILNRT_CHECK(v >= 0, kInvalidModel, node.describe(),
                 "Reshape: invalid dim " << v << " in shape " << shape_to_string(spec));
    out[i] = v;
    KILNRT_CHECK(!__builtin_mul_overflow(known, v, &known), kInvalidArgument, node.describe(),
                 "Reshape: shape " << shape_to_string(spec) << " has more elements than int64 can count");
  }
  if (infer_at >= 0) {
    KILNRT_CHECK(known != 0 && x.numel() % known == 0, kInvalidArgument, node.describe(),
                 "Reshape: cannot reshape input of shape " << shape_to_string(x.shape()) << " (" << x.numel()
                                                           << " elements) to " << shape_to_string(spec));
    out[infer_at] = x.numel() / known;
  }
  KILNRT_CHECK(shape_numel(out) == x.numel(), kInvalidArgument, node.describe(),
               "Reshape: cannot reshape input of shape " << shape_to_string(x.shape()) << " (" << x.numel()
                                                         << " elements) to " << shape_to_string(spec) << " ("
                                                         << shape_numel(out) << " elements)");
  return out;
}

// Known product and multiset of symbol names of a list of dims; false when some dim is anonymous-unknown.
bool factorize(const std::vector<SymInt>& dims, int64_t* product, std::multiset<std::string>* names) {
  *product = 1;
  for (const SymInt& d : dims) {
    if (d.known) {
      *product *= d.value;
    } else if (!d.name.empty()) {
      for (const std::string& f : sym_product_factors(d.name)) {
        SymInt v = dim_to_sym_int(ir::Dim::symbol(f));
        if (v.known)
          *product *= v.value;
        else
          names->insert(f);
      }
    } else {
      return false;
    }
  }
  return true;
}

// The -1 dim of a symbolic reshape: cancels symbols common to the input and the other output dims.
SymInt infer_minus_one(const ir::SymShape& in, const std::vector<SymInt>& others) {
  std::vector<SymInt> in_dims;
  for (const ir::Dim& d : in) in_dims.push_back(shape_dim_to_sym_int(d));
  int64_t pin = 1, pout = 1;
  std::multiset<std::string> nin, nout;
  if (!factorize(in_dims, &pin, &nin) || !factorize(others, &pout, &nout)) return SymInt::unknown();
  for (auto it = nout.begin(); it != nout.end();) {
    auto f = nin.find(*it);
    if (f == nin.end()) return SymInt::unknown();  // an output symbol the input does not have
    nin.erase(f);
    it = nout.erase(it);
  }
  if (pout == 0 || pin % pout != 0) return SymInt::unknown();
  int64_t q = pin / pout;
  if (nin.empty()) return SymInt::of(q);
  if (nin.size() == 1 && q == 1) return SymInt::named(*nin.begin());
  SymInt r = SymInt::of(q);
  for (const std::string& n : nin) r = sym_binary('*', r, SymInt::named(n));
  return r;
}

void reshape_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  bool allowzero = ctx.node.attr_int("allowzero", 0) != 0;
  auto spec = input_sym_ints(ctx, 1);
  if (!spec) {
    auto s = input_shape(ctx, 1);
    if (s && s->size() == 1 && (*s)[0].known())
      ctx.set_output(0, x.dtype, ir::SymShape(static_cast<size_t>((*s)[0].value)));
    else
      ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  std::vector<SymInt> dims(spec->size());
  int64_t infer_at = -1;
  for (size_t i = 0; i < spec->size(); ++i) {
    const SymInt& v = (*spec)[i];
    if (v.known && v.value == -1) {
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (v.known && v.value == 0 && !allowzero) {
      dims[i] = (x.has_shape && i < x.shape.size()) ? shape_dim_to_sym_int(x.shape[i]) : SymInt::unknown();
      continue;
    }
    dims[i] = (v.known && v.value < 0) ? SymInt::unknown() : v;
  }
  if (infer_at >= 0) {
    std::vector<SymInt> others;
    for (size_t i = 0; i < dims.size(); ++i)
      if (static_cast<int64_t>(i) != infer_at) others.push_back(dims[i]);
    dims[infer_at] = x.has_shape ? infer_minus_one(x.shape, others) : SymInt::unknown();
  }
  ir::SymShape out;
  for (const SymInt& d : dims) out.push_back(sym_int_to_shape_dim(d));
  ctx.set_output(0, x.dtype, out);
  pass_sym_value(ctx);
}

OpSchema reshape_schema() {
  OpSchema s;
  s.op_type = "Reshape";
  s.since_version = 5;
  s.infer = reshape_infer;
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    bool allowzero = ctx.node.attr_int("allowzero", 0) != 0;
    ctx.outputs[0] = x.reshaped(reshape_target(x, read_int_input(ctx, 1), allowzero, ctx.node));
  };
  s.dtypes = kAllDTypes;
  s.doc = "a view with a new shape (0 copies a dim unless allowzero, -1 is inferred)";
  return s;
}
KILNRT_REGISTER_OP(reshape_schema());

// ---- Unsqueeze / Squeeze -------------------------------------------------------------------------------------
template <class D>
std::vector<D> unsqueeze_dims(const std::vector<D>& in, const std::vector<int64_t>& axes, const ir::Node& node) {
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<int64_t> norm = normalize_axes(axes, out_rank, node);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) inserted[a] = true;
  std::vector<D> out;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? D(1) : in[k++]);
  return out;
}

void unsqueeze_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  bool unknown = false;
  auto axes = axes_for_infer(ctx, "axes", 1, &unknown);
  if (!x.has_shape || !axes) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  ctx.set_output(0, x.dtype, unsqueeze_dims(x.shape, *axes, ctx.node));
  pass_sym_value(ctx);
}

OpSchema unsqueeze_schema() {
  OpSchema s;
  s.op_type = "Unsqueeze";
  s.since_version = 1;
  s.infer = unsqueeze_infer;
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    auto axes = axes_for_cpu(ctx, "axes", 1);
    KILNRT_CHECK(axes.has_value(), kInvalidModel, ctx.node.describe(), "Unsqueeze: missing axes");
    ctx.outputs[0] = x.reshaped(unsqueeze_dims(x.shape(), *axes, ctx.node));
  };
  s.dtypes = kAllDTypes;
  s.doc = "inserts size-1 dims at axes (attribute before opset 13, input after)";
  return s;
}
KILNRT_REGISTER_OP(unsqueeze_schema());

void squeeze_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  bool unknown = false;
  auto axes = axes_for_infer(ctx, "axes", 1, &unknown);
  if (!x.has_shape || unknown) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes && !axes->empty()) {
    for (int64_t a : normalize_axes(*axes, rank, ctx.node)) {
      KILNRT_CHECK(!x.shape[a].known() || x.shape[a].value == 1, kInvalidModel, ctx.node.describe(),
                   "Squeeze: axis " << a << " has size " << x.shape[a].value << ", not 1");
      drop[a] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      if (!x.shape[i].known()) {  // might be 1: the output rank is unknown
        ctx.set_output_rank_unknown(0, x.dtype);
        return;
      }
      drop[i] = x.shape[i].value == 1;
    }
  }
  ir::SymShape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  ctx.set_output(0, x.dtype, out);
  pass_sym_value(ctx);
}

OpSchema squeeze_schema() {
  OpSchema s;
  s.op_type = "Squeeze";
  s.since_version = 1;
  s.infer = squeeze_infer;
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    auto axes = axes_for_cpu(ctx, "axes", 1);
    Shape out;
    std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
    if (axes && !axes->empty()) {
      for (int64_t a : normalize_axes(*axes, x.rank(), ctx.node)) {
        KILNRT_CHECK(x.shape()[a] == 1, kInvalidArgument, ctx.node.describe(),
                     "Squeeze: axis " << a << " of input shape " << shape_to_string(x.shape()) << " is not 1");
        drop[a] = true;
      }
    } else {
      for (int i = 0; i < x.rank(); ++i) drop[i] = x.shape()[i] == 1;
    }
    for (int i = 0; i < x.rank(); ++i)
      if (!drop[i]) out.push_back(x.shape()[i]);
    ctx.outputs[0] = x.reshaped(out);
  };
  s.dtypes = kAllDTypes;
  s.doc = "removes size-1 dims (all, or those at axes)";
  return s;
}
KILNRT_REGISTER_OP(squeeze_schema());

// ---- Expand -------------------------------------------------------------------------------------------------
void expand_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  auto spec = input_sym_ints(ctx, 1);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  if (!spec) {
    auto s = input_shape(ctx, 1);
    if (s && s->size() == 1 && (*s)[0].known()) {
      size_t rank = std::max<size_t>(x.shape.size(), static_cast<size_t>((*s)[0].value));
      ctx.set_output(0, x.dtype, ir::SymShape(rank));
    } else {
      ctx.set_output_rank_unknown(0, x.dtype);
    }
    return;
  }
  ir::SymShape target;
  for (const SymInt& d : *spec) target.push_back(sym_int_to_shape_dim(d));
  ctx.set_output(0, x.dtype, broadcast_sym_shapes(x.shape, target, ctx.node));
}

void expand_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape target = read_int_input(ctx, 1);
  Shape out_shape = broadcast_shapes(x.shape(), target, ctx.node);
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  dispatch_by_size(dtype_size(x.dtype()), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for_each_broadcast_row<1>(
        out_shape, {&x.shape()},
        [&](int64_t o, const std::array<int64_t, 1>& off, const std::array<int64_t, 1>& st, int64_t n) {
          for (int64_t j = 0; j < n; ++j) out[o + j] = in[off[0] + j * st[0]];
        });
  });
  ctx.outputs[0] = y;
}

OpSchema expand_schema() {
  OpSchema s;
  s.op_type = "Expand";
  s.since_version = 8;
  s.infer = expand_infer;
  s.cpu = expand_cpu;
  s.dtypes = kAllDTypes;
  s.doc = "broadcasts the input to a shape";
  return s;
}
KILNRT_REGISTER_OP(expand_schema());

// ---- Transpose ----------------------------------------------------------------------------------------------
std::vector<int64_t> transpose_perm(const ir::Node& node, int64_t rank) {
  std::vector<int64_t> perm;
  if (node.has_attr("perm")) {
    perm = node.attr_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  KILNRT_CHECK(static_cast<int64_t>(perm.size()) == rank, kInvalidModel, node.describe(),
               "Transpose: perm has " << perm.size() << " entries for an input of rank " << rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    KILNRT_CHECK(p >= -rank && p < rank, kInvalidModel, node.describe(),
                 "Transpose: perm entry " << p << " out of range");
    if (p < 0) p += rank;
    KILNRT_CHECK(!seen[p], kInvalidModel, node.describe(), "Transpose: perm repeats axis " << p);
    seen[p] = true;
  }
  return perm;
}

OpSchema transpose_schema() {
  OpSchema s;
  s.op_type = "Transpose";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    const ir::TensorType& x = ctx.input(0);
    if (!x.has_shape) {
      ctx.set_output_rank_unknown(0, x.dtype);
      return;
    }
    std::vector<int64_t> perm = transpose_perm(ctx.node, static_cast<int64_t>(x.shape.size()));
    ir::SymShape out;
    for (int64_t p : perm) out.push_back(x.shape[p]);
    ctx.set_output(0, x.dtype, out);
  };
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> perm = transpose_perm(ctx.node, x.rank());
    std::vector<int64_t> in_strides = contiguous_strides(x.shape());
    Shape out_shape;
    std::vector<int64_t> strides;
    for (int64_t p : perm) {
      out_shape.push_back(x.shape()[p]);
      strides.push_back(in_strides[p]);
    }
    Tensor y = Tensor::empty(x.dtype(), out_shape);
    strided_copy(x.raw(), y.raw(), dtype_size(x.dtype()), out_shape, strides, 0);
    ctx.outputs[0] = y;
  };
  s.dtypes = kAllDTypes;
  s.doc = "permutes dims (default: reverses them)";
  return s;
}
KILNRT_REGISTER_OP(transpose_schema());

}  // namespace
}  // namespace kilnrt::ops
