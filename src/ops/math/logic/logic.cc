// Comparisons (Equal Less LessOrEqual Greater GreaterOrEqual -> bool), boolean logic (Not And Or Xor) and Where.
#include <string>

#include "ops/math/elementwise.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

// Comparisons of numbers in the compute type. NaN compares false (and unequal to itself), as in IEEE.
template <class Cmp>
OpSchema compare_schema(const char* op, int since, const char* doc, Cmp cmp) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx, DType::kBool); };
  s.cpu = [cmp](CpuContext& ctx) {
    check_same_dtypes(ctx);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor y = Tensor::empty(DType::kBool, broadcast_shapes(a.shape(), b.shape(), ctx.node));
    dispatch_dtype<DTypeSet::kAll>(a.dtype(), ctx.node.describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      binary_map<T, T, bool>(a, b, y, [&](C x, C z) { return cmp(x, z); });
    });
    ctx.outputs[0] = y;
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
  s.doc = doc;
  return s;
}

KILNRT_REGISTER_OP(compare_schema("Equal", 1, "a == b -> bool", [](auto a, auto b) { return a == b; }));
KILNRT_REGISTER_OP(compare_schema("Less", 1, "a < b -> bool", [](auto a, auto b) { return a < b; }));
KILNRT_REGISTER_OP(compare_schema("LessOrEqual", 12, "a <= b -> bool", [](auto a, auto b) { return a <= b; }));
KILNRT_REGISTER_OP(compare_schema("Greater", 1, "a > b -> bool", [](auto a, auto b) { return a > b; }));
KILNRT_REGISTER_OP(compare_schema("GreaterOrEqual", 12, "a >= b -> bool", [](auto a, auto b) { return a >= b; }));

void check_bool(const CpuContext& ctx, size_t i) {
  KILNRT_CHECK(ctx.input(i).dtype() == DType::kBool, kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << ": input " << i << " ('" << ctx.node.inputs[i] << "') must be bool, got "
                                << dtype_name(ctx.input(i).dtype()));
}

template <class F>
OpSchema bool_binary_schema(const char* op, const char* doc, F f) {
  OpSchema s;
  s.op_type = op;
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx, DType::kBool); };
  s.cpu = [f](CpuContext& ctx) {
    check_bool(ctx, 0);
    check_bool(ctx, 1);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor y = Tensor::empty(DType::kBool, broadcast_shapes(a.shape(), b.shape(), ctx.node));
    // Read bytes as "nonzero" so that bool buffers holding values other than 0/1 still behave.
    binary_map<uint8_t, uint8_t, bool>(a, b, y, [&](uint8_t x, uint8_t z) { return f(x != 0, z != 0); });
    ctx.outputs[0] = y;
  };
  s.dtypes = {DType::kBool};
  s.doc = doc;
  return s;
}

KILNRT_REGISTER_OP(bool_binary_schema("And", "a && b", [](bool a, bool b) { return a && b; }));
KILNRT_REGISTER_OP(bool_binary_schema("Or", "a || b", [](bool a, bool b) { return a || b; }));
KILNRT_REGISTER_OP(bool_binary_schema("Xor", "a != b", [](bool a, bool b) { return a != b; }));

OpSchema not_schema() {
  OpSchema s;
  s.op_type = "Not";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) {
    const ir::TensorType& in = ctx.input(0);
    if (in.has_shape)
      ctx.set_output(0, DType::kBool, in.shape);
    else
      ctx.set_output_rank_unknown(0, DType::kBool);
  };
  s.cpu = [](CpuContext& ctx) {
    check_bool(ctx, 0);
    const Tensor& x = ctx.input(0);
    Tensor y = Tensor::empty(DType::kBool, x.shape());
    unary_map<uint8_t, bool>(x, y, [](uint8_t v) { return v == 0; });
    ctx.outputs[0] = y;
  };
  s.dtypes = {DType::kBool};
  s.doc = "!x";
  return s;
}
KILNRT_REGISTER_OP(not_schema());

// Where(cond, x, y): broadcast of all three; output dtype of x.
void where_infer(ShapeContext& ctx) {
  infer_broadcast(ctx, ctx.input(1).dtype);
  // Symbolic values: a known condition selects element values of x / y.
  auto cond = ctx.value(0);
  auto x = input_sym_ints(ctx, 1);
  auto y = input_sym_ints(ctx, 2);
  if (!cond || cond->dtype() != DType::kBool || cond->rank() > 1 || !x || !y) return;
  size_t n = std::max<size_t>({static_cast<size_t>(cond->numel()), x->size(), y->size()});
  auto pick = [n](size_t size, size_t i) { return size == 1 ? 0 : i; };
  if ((cond->numel() != 1 && static_cast<size_t>(cond->numel()) != n) || (x->size() != 1 && x->size() != n) ||
      (y->size() != 1 && y->size() != n))
    return;
  SymInts out;
  const bool* c = cond->data<bool>();
  for (size_t i = 0; i < n; ++i)
    out.push_back(c[pick(cond->numel(), i)] ? (*x)[pick(x->size(), i)] : (*y)[pick(y->size(), i)]);
  set_output_sym_ints(ctx, 0, out);
}

void where_cpu(CpuContext& ctx) {
  check_bool(ctx, 0);
  check_same_dtypes(ctx, 1, 2);
  const Tensor& c = ctx.input(0);
  const Tensor& a = ctx.input(1);
  const Tensor& b = ctx.input(2);
  Shape shape = broadcast_shapes(broadcast_shapes(c.shape(), a.shape(), ctx.node), b.shape(), ctx.node);
  Tensor y = Tensor::empty(a.dtype(), shape);
  // Elements are only moved, so any dtype works through an unsigned type of its size.
  dispatch_by_size(dtype_size(a.dtype()), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ternary_map<uint8_t, T, T, T>(c, a, b, y, [](uint8_t cond, T x, T z) { return cond ? x : z; });
  });
  ctx.outputs[0] = y;
}

OpSchema where_schema() {
  OpSchema s;
  s.op_type = "Where";
  s.since_version = 9;
  s.infer = where_infer;
  s.cpu = where_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
  s.doc = "cond ? x : y (broadcasting)";
  return s;
}
KILNRT_REGISTER_OP(where_schema());

}  // namespace
}  // namespace kilnrt::ops
