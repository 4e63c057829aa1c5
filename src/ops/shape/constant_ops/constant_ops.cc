// Identity, Constant, ConstantOfShape, Shape, Size, Range: the sources of shape subgraphs. Their shape functions
// produce sym_value (symbolic element values) so that later Reshape/Expand keep names like "batch".
#include <cmath>
#include <cstring>
#include <string>

#include "ops/math/elementwise.h"
#include "ops/shape/shape_util.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

// ---- Identity ------------------------------------------------------------------------------------------------
OpSchema identity_schema() {
  OpSchema s;
  s.op_type = "Identity";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    ctx.outputs[0] = ctx.input(0);
    if (auto v = input_sym_ints(ctx, 0)) set_output_sym_ints(ctx, 0, *v);
  };
  s.cpu = [](CpuContext& ctx) { ctx.outputs[0] = ctx.input(0); };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
  s.doc = "y = x (a view)";
  return s;
}
KILNRT_REGISTER_OP(identity_schema());

// ---- Constant ------------------------------------------------------------------------------------------------
Tensor constant_value(const ir::Node& node) {
  if (node.has_attr("value")) return node.attr_tensor("value");
  if (node.has_attr("value_float")) {
    float v = node.attr_float("value_float");
    return Tensor::from_data(&v, DType::kFloat32, {});
  }
  if (node.has_attr("value_floats")) {
    std::vector<float> v = node.attr_floats("value_floats");
    return Tensor::from_data(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())});
  }
  if (node.has_attr("value_int")) {
    int64_t v = node.attr_int("value_int");
    return Tensor::from_data(&v, DType::kInt64, {});
  }
  if (node.has_attr("value_ints")) {
    std::vector<int64_t> v = node.attr_ints("value_ints");
    return Tensor::from_data(v.data(), DType::kInt64, {static_cast<int64_t>(v.size())});
  }
  KILNRT_THROW(kUnsupported, node.describe(),
               "Constant: needs one of the attributes value, value_float(s), value_int(s) "
               "(sparse_value and value_string(s) are not supported)");
}

OpSchema constant_schema() {
  OpSchema s;
  s.op_type = "Constant";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    Tensor t = constant_value(ctx.node);
    ctx.set_output(0, t.dtype(), ir::shape_to_sym(t.shape()));
    if (auto v = tensor_sym_ints(t)) set_output_sym_ints(ctx, 0, *v);
  };
  s.cpu = [](CpuContext& ctx) { ctx.outputs[0] = constant_value(ctx.node); };
  s.doc = "a constant from its attribute";
  return s;
}
KILNRT_REGISTER_OP(constant_schema());

// ---- ConstantOfShape -------------------------------------------------------------------------------------------
Tensor fill_value(const ir::Node& node) {
  if (!node.has_attr("value")) {
    float zero = 0.f;
    return Tensor::from_data(&zero, DType::kFloat32, {});
  }
  Tensor v = node.attr_tensor("value");
  KILNRT_CHECK(v.numel() == 1, kInvalidModel, node.describe(),
               "ConstantOfShape: attribute 'value' must hold one element, got " << v.numel());
  return v;
}

OpSchema constant_of_shape_schema() {
  OpSchema s;
  s.op_type = "ConstantOfShape";
  s.since_version = 9;
  s.infer = [](ShapeContext& ctx) {
    DType dtype = fill_value(ctx.node).dtype();
    if (auto v = input_sym_ints(ctx, 0)) {
      ir::SymShape shape;
      for (const SymInt& d : *v) shape.push_back(sym_int_to_shape_dim(d));
      ctx.set_output(0, dtype, shape);
      return;
    }
    auto in = input_shape(ctx, 0);
    if (in && in->size() == 1 && (*in)[0].known())
      ctx.set_output(0, dtype, ir::SymShape(static_cast<size_t>((*in)[0].value)));
    else
      ctx.set_output_rank_unknown(0, dtype);
  };
  s.cpu = [](CpuContext& ctx) {
    Tensor value = fill_value(ctx.node);
    Shape shape = read_int_input(ctx, 0);
    for (int64_t d : shape)
      KILNRT_CHECK(d >= 0, kInvalidArgument, ctx.node.describe(),
                   "ConstantOfShape: negative dimension in shape " << shape_to_string(shape));
    Tensor y = Tensor::empty(value.dtype(), shape);
    const size_t es = dtype_size(value.dtype());
    dispatch_by_size(es, ctx.node.describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v;
      std::memcpy(&v, value.raw(), sizeof(T));
      T* out = y.data<T>();
      parallel_for_range(y.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = v;
      });
    });
    ctx.outputs[0] = y;
  };
  s.doc = "a tensor of the given shape filled with attribute 'value' (default float 0)";
  return s;
}
KILNRT_REGISTER_OP(constant_of_shape_schema());

// ---- Shape / Size -------------------------------------------------------------------------------------------
// [start, end) of Shape (opset 15 attributes), clamped like ONNX.
std::pair<int64_t, int64_t> shape_range(const ir::Node& node, int64_t rank) {
  int64_t start = node.attr_int("start", 0);
  int64_t end = node.has_attr("end") ? node.attr_int("end") : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

OpSchema shape_schema() {
  OpSchema s;
  s.op_type = "Shape";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    auto in = input_shape(ctx, 0);
    if (!in) {
      ctx.set_output(0, DType::kInt64, {ir::Dim()});
      return;
    }
    auto [start, end] = shape_range(ctx.node, static_cast<int64_t>(in->size()));
    ctx.set_output(0, DType::kInt64, {ir::Dim(end - start)});
    SymInts v;
    for (int64_t i = start; i < end; ++i) v.push_back(shape_dim_to_sym_int((*in)[i]));
    set_output_sym_ints(ctx, 0, v);
  };
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    auto [start, end] = shape_range(ctx.node, x.rank());
    Tensor y = Tensor::empty(DType::kInt64, {end - start});
    for (int64_t i = start; i < end; ++i) y.data<int64_t>()[i - start] = x.shape()[i];
    ctx.outputs[0] = y;
  };
  s.doc = "the input's shape as int64 (start/end attributes)";
  return s;
}
KILNRT_REGISTER_OP(shape_schema());

OpSchema size_schema() {
  OpSchema s;
  s.op_type = "Size";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    ctx.set_output(0, DType::kInt64, {});
    auto in = input_shape(ctx, 0);
    if (!in) return;
    SymInt n = SymInt::of(1);
    for (const ir::Dim& d : *in) n = sym_binary('*', n, shape_dim_to_sym_int(d));
    set_output_sym_ints(ctx, 0, {n});
  };
  s.cpu = [](CpuContext& ctx) {
    int64_t n = ctx.input(0).numel();
    ctx.outputs[0] = Tensor::from_data(&n, DType::kInt64, {});
  };
  s.doc = "number of elements as an int64 scalar";
  return s;
}
KILNRT_REGISTER_OP(size_schema());

// ---- Range ---------------------------------------------------------------------------------------------------
template <class C>
int64_t range_count(C start, C limit, C delta) {
  double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void range_infer(ShapeContext& ctx) {
  DType dtype = ctx.input(0).dtype;
  auto start = input_sym_ints(ctx, 0);
  auto limit = input_sym_ints(ctx, 1);
  auto delta = input_sym_ints(ctx, 2);
  bool ints = dtype == DType::kInt64 || dtype == DType::kInt32;
  if (ints && start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
    const SymInt &s0 = (*start)[0], &l0 = (*limit)[0], &d0 = (*delta)[0];
    if (s0.known && l0.known && d0.known && d0.value != 0) {
      int64_t n = range_count<int64_t>(s0.value, l0.value, d0.value);
      ctx.set_output(0, dtype, {ir::Dim(n)});
      if (n <= kMaxSymValueElements) {
        SymInts v;
        for (int64_t i = 0; i < n; ++i) v.push_back(SymInt::of(s0.value + i * d0.value));
        set_output_sym_ints(ctx, 0, v);
      }
      return;
    }
    // Range(0, n, 1) has n elements, whatever n's name.
    if (s0.known && s0.value == 0 && d0.known && d0.value == 1 && !l0.known) {
      ctx.set_output(0, dtype, {sym_int_to_shape_dim(l0)});
      return;
    }
  }
  // Float ranges with constant inputs.
  if (!ints && ctx.value(0) && ctx.value(1) && ctx.value(2)) {
    double v[3];
    for (int i = 0; i < 3; ++i) {
      const Tensor* t = ctx.value(i);
      dispatch_dtype<DTypeSet::kFloat>(t->dtype(), ctx.node.describe(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        v[i] = static_cast<double>(Compute<T>::load(t->data<T>()[0]));
      });
    }
    if (v[2] != 0) {
      ctx.set_output(0, dtype, {ir::Dim(range_count<double>(v[0], v[1], v[2]))});
      return;
    }
  }
  ctx.set_output(0, dtype, {ir::Dim()});
}

void range_cpu(CpuContext& ctx) {
  check_same_dtypes(ctx);
  const Tensor& t0 = ctx.input(0);
  for (size_t i = 0; i < 3; ++i)
    KILNRT_CHECK(ctx.input(i).numel() == 1, kInvalidModel, ctx.node.describe(),
                 "Range: input " << i << " ('" << ctx.node.inputs[i] << "') must be a scalar, got shape "
                                 << shape_to_string(ctx.input(i).shape()));
  dispatch_dtype<DTypeSet::kNumeric>(t0.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    C start = Compute<T>::load(ctx.input(0).data<T>()[0]);
    C limit = Compute<T>::load(ctx.input(1).data<T>()[0]);
    C delta = Compute<T>::load(ctx.input(2).data<T>()[0]);
    KILNRT_CHECK(delta != C(0), kInvalidArgument, ctx.node.describe(), "Range: delta is zero");
    int64_t n = range_count<C>(start, limit, delta);
    Tensor y = Tensor::empty(t0.dtype(), {n});
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = Compute<T>::store(static_cast<C>(start + static_cast<C>(i) * delta));
    ctx.outputs[0] = y;
  });
}

OpSchema range_schema() {
  OpSchema s;
  s.op_type = "Range";
  s.since_version = 11;
  s.infer = range_infer;
  s.cpu = range_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32};
  s.doc = "start, start+delta, ... below limit";
  return s;
}
KILNRT_REGISTER_OP(range_schema());

}  // namespace
}  // namespace kilnrt::ops
