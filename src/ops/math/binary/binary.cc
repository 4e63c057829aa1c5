// Broadcasting arithmetic: Add Sub Mul Div Pow Mod BitShift PRelu, Bitwise{And,Or,Xor}, SwiGLU, and the variadic
// Min Max Sum Mean.
// Shape functions also propagate symbolic element values (sym_value) through Add/Sub/Mul/Div of shape tensors.
#include <cmath>
#include <string>
#include <type_traits>

#include "core/int_div.h"
#include "ops/math/elementwise.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined behaviour in C++).
template <class C>
C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class C>
C wrap_sub(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <class C>
C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// Max/Min that return NaN when either operand is NaN.
template <class C>
C nan_max(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}
template <class C>
C nan_min(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  return b < a ? b : a;
}

// Throws when an integer divisor tensor holds a zero (checked before the parallel loop).
void check_no_integer_zero(const Tensor& b, const CpuContext& ctx) {
  dispatch_dtype<DTypeSet::kAll>(b.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = b.data<T>();
      for (int64_t i = 0; i < b.numel(); ++i)
        KILNRT_CHECK(p[i] != 0, kInvalidArgument, ctx.node.describe(),
                     ctx.node.op_type << ": integer division by zero (input '" << ctx.node.inputs[1] << "')");
    }
  });
}

// Symbolic values through Add/Sub/Mul/Div of small int tensors (numpy broadcasting of 1-D / scalar operands).
void propagate_sym_arith(ShapeContext& ctx, char op) {
  if (ctx.outputs.empty() || (ctx.outputs[0].dtype != DType::kInt64 && ctx.outputs[0].dtype != DType::kInt32)) return;
  auto a = input_sym_ints(ctx, 0);
  auto b = input_sym_ints(ctx, 1);
  if (!a || !b) return;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  SymInts out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(sym_binary(op, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  set_output_sym_ints(ctx, 0, out);
}

// out = f(a, b) with the output dtype equal to a's.
template <DTypeSet S, class F>
Tensor binary_same_dtype(const Tensor& a, const Tensor& b, const CpuContext& ctx, F f) {
  Tensor y = Tensor::empty(a.dtype(), broadcast_shapes(a.shape(), b.shape(), ctx.node));
  dispatch_dtype<S>(a.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    binary_map<T, T, T>(a, b, y, [&](C x, C z) { return static_cast<C>(f(x, z)); });
  });
  return y;
}

template <DTypeSet S, class Factory>
OpSchema binary_schema(const char* op, int since, const char* doc, char sym_op, Factory factory) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.infer = [sym_op](ShapeContext& ctx) {
    infer_broadcast(ctx);
    if (sym_op) propagate_sym_arith(ctx, sym_op);
  };
  s.cpu = [factory, sym_op](CpuContext& ctx) {
    check_same_dtypes(ctx);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (sym_op == '/') check_no_integer_zero(b, ctx);
    ctx.outputs[0] = binary_same_dtype<S>(a, b, ctx, factory(ctx.node));
  };
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                  DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kUInt32, DType::kUInt64})
    if (dtype_in_set(t, S)) s.dtypes.push_back(t);
  s.doc = doc;
  return s;
}

auto no_attrs = [](auto fn) { return [fn](const ir::Node&) { return fn; }; };

KILNRT_REGISTER_OP(binary_schema<DTypeSet::kNumeric>("Add", 1, "a + b (broadcasting)", '+',
                                                     no_attrs([](auto a, auto b) { return wrap_add(a, b); })));
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kNumeric>("Sub", 1, "a - b (broadcasting)", '-',
                                                     no_attrs([](auto a, auto b) { return wrap_sub(a, b); })));
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kNumeric>("Mul", 1, "a * b (broadcasting)", '*',
                                                     no_attrs([](auto a, auto b) { return wrap_mul(a, b); })));
// Integers: truncated toward zero, INT_MIN / -1 wraps to INT_MIN (core/int_div.h); a zero divisor was refused.
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kNumeric>("Div", 1, "a / b (integers truncate toward zero)", '/',
                                                     no_attrs([](auto a, auto b) {
                                                       if constexpr (std::is_integral_v<decltype(a)>)
                                                         return int_div(a, b);
                                                       else
                                                         return a / b;
                                                     })));
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kNumeric>("PRelu", 1, "x<0 ? slope*x : x (slope broadcasts)", 0,
                                                     no_attrs([](auto x, auto slope) {
                                                       using C = decltype(x);
                                                       return x < C(0) ? C(slope * x) : x;
                                                     })));

// Mod: fmod=1 -> C fmod (sign of the dividend); fmod=0 -> Python/numpy mod (sign of the divisor).
void mod_cpu(CpuContext& ctx) {
  check_same_dtypes(ctx);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  bool use_fmod = ctx.node.attr_int("fmod", 0) != 0;
  check_no_integer_zero(b, ctx);
  ctx.outputs[0] = binary_same_dtype<DTypeSet::kNumeric>(a, b, ctx, [use_fmod](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(x, y);
      if (!use_fmod && r != C(0) && ((r < C(0)) != (y < C(0)))) r += y;
      return r;
    } else {
      C r = int_rem(x, y);  // x % -1 is 0 for every x, INT_MIN included
      if constexpr (std::is_signed_v<C>) {
        if (!use_fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
      }
      return r;
    }
  });
}

OpSchema mod_schema() {
  OpSchema s;
  s.op_type = "Mod";
  s.since_version = 10;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx); };
  s.cpu = mod_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,  DType::kInt32,
              DType::kInt8,    DType::kUInt8,   DType::kInt16,    DType::kUInt16,  DType::kUInt32, DType::kUInt64};
  s.doc = "remainder; fmod=1: sign of dividend, fmod=0: sign of divisor";
  return s;
}
KILNRT_REGISTER_OP(mod_schema());

// BitShift: unsigned integers (opset 11) and, from opset 28, signed integers too: a right
// shift of a signed value is arithmetic (the sign bit fills the vacated bits), a left shift wraps in two's
// complement. A shift amount outside [0, width) gives the full-width result: 0, or -1 for a right shift of a
// negative value.
template <class C>
C shift_value(C x, C y, bool left) {
  using U = std::make_unsigned_t<C>;
  constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
  bool in_range = true;
  if constexpr (std::is_signed_v<C>) in_range = y >= 0;
  if (in_range && static_cast<uint64_t>(y) >= static_cast<uint64_t>(kWidth)) in_range = false;
  if (!in_range) {
    if constexpr (std::is_signed_v<C>) return (!left && x < 0) ? C(-1) : C(0);
    return C(0);
  }
  const int n = static_cast<int>(y);
  if (left) return static_cast<C>(static_cast<U>(static_cast<U>(x) << n));
  if constexpr (std::is_signed_v<C>) {
    // Arithmetic right shift written without relying on implementation-defined >> of negative values.
    return x >= 0 ? static_cast<C>(x >> n) : static_cast<C>(~(static_cast<U>(~x) >> n));
  }
  return static_cast<C>(x >> n);
}

void bitshift_cpu(CpuContext& ctx) {
  check_same_dtypes(ctx);
  const Tensor& a = ctx.input(0);
  const std::string dir = ctx.node.attr_string("direction");
  KILNRT_CHECK(dir == "LEFT" || dir == "RIGHT", kInvalidModel, ctx.node.describe(),
               "direction must be LEFT or RIGHT, got '" << dir << "'");
  const DType t = a.dtype();
  KILNRT_CHECK(
      ctx.opset >= 28 || t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64,
      kUnsupported, ctx.node.describe(),
      "BitShift before opset 28 needs an unsigned integer dtype, got " << dtype_name(t) << " (opset " << ctx.opset
                                                                       << ")");
  const bool left = dir == "LEFT";
  ctx.outputs[0] = binary_same_dtype<DTypeSet::kInteger>(a, ctx.input(1), ctx, [left](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      return shift_value<C>(x, y, left);
    } else {
      return x;
    }
  });
}

OpSchema bitshift_schema() {
  OpSchema s;
  s.op_type = "BitShift";
  s.since_version = 11;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx); };
  s.cpu = bitshift_cpu;
  s.dtypes = {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64,
              DType::kInt8,  DType::kInt16,  DType::kInt32,  DType::kInt64};
  s.doc = "x << y or x >> y (direction); signed: arithmetic right shift, out-of-range shifts give 0 or -1";
  return s;
}
KILNRT_REGISTER_OP(bitshift_schema());

// SwiGLU (opset 28): a * sigmoid(alpha * a) * b; A and B of one shape and dtype (no broadcasting).
void swiglu_cpu(CpuContext& ctx) {
  check_same_dtypes(ctx);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  KILNRT_CHECK(a.shape() == b.shape(), kInvalidModel, ctx.node.describe(),
               "SwiGLU needs A and B of the same shape, got " << shape_to_string(a.shape()) << " and "
                                                              << shape_to_string(b.shape()));
  const double alpha = ctx.node.attr_float("alpha", 1.0f);
  ctx.outputs[0] = binary_same_dtype<DTypeSet::kFloat>(a, b, ctx, [alpha](auto x, auto y) {
    using C = decltype(x);
    const double s = 1.0 / (1.0 + std::exp(-alpha * static_cast<double>(x)));
    return static_cast<C>(static_cast<double>(x) * s * static_cast<double>(y));
  });
}

OpSchema swiglu_schema() {
  OpSchema s;
  s.op_type = "SwiGLU";
  s.since_version = 28;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx); };
  s.cpu = swiglu_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
  s.doc = "a * sigmoid(alpha * a) * b (same shapes)";
  return s;
}
KILNRT_REGISTER_OP(swiglu_schema());

// Bitwise logic of integers (opset 18).
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kInteger>("BitwiseAnd", 18, "a & b (integers)", 0, [](const ir::Node&) {
  return [](auto x, auto y) { return x & y; };
}));
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kInteger>("BitwiseOr", 18, "a | b (integers)", 0, [](const ir::Node&) {
  return [](auto x, auto y) { return x | y; };
}));
KILNRT_REGISTER_OP(binary_schema<DTypeSet::kInteger>("BitwiseXor", 18, "a ^ b (integers)", 0, [](const ir::Node&) {
  return [](auto x, auto y) { return x ^ y; };
}));

template <class CA, class CB>
CA pow_value(CA x, CB e) {
  if constexpr (std::is_same_v<CA, float> && std::is_same_v<CB, float>) return std::pow(x, e);
  return static_cast<CA>(std::pow(static_cast<double>(x), static_cast<double>(e)));
}

// Pow: the exponent may have another numeric dtype; the output has the base's dtype.
void pow_cpu(CpuContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor y = Tensor::empty(a.dtype(), broadcast_shapes(a.shape(), b.shape(), ctx.node));
  dispatch_dtype<DTypeSet::kNumeric>(a.dtype(), ctx.node.describe(), [&](auto ta) {
    using TA = typename decltype(ta)::type;
    using CA = compute_t<TA>;
    dispatch_dtype<DTypeSet::kNumeric>(b.dtype(), ctx.node.describe(), [&](auto tb) {
      using TB = typename decltype(tb)::type;
      using CB = compute_t<TB>;
      binary_map<TA, TB, TA>(a, b, y, [](CA x, CB e) { return pow_value<CA, CB>(x, e); });
    });
  });
  ctx.outputs[0] = y;
}

OpSchema pow_schema() {
  OpSchema s;
  s.op_type = "Pow";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx); };
  s.cpu = pow_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32};
  s.doc = "a ^ b (the exponent may have another dtype)";
  return s;
}
KILNRT_REGISTER_OP(pow_schema());

// ---- variadic ----------------------------------------------------------------------------------------------
template <class F>
Tensor fold_inputs(CpuContext& ctx, F f) {
  check_same_dtypes(ctx);
  KILNRT_CHECK(ctx.num_inputs() >= 1 && ctx.has_input(0), kInvalidModel, ctx.node.describe(),
               ctx.node.op_type << " needs at least one input");
  Tensor acc = *ctx.inputs[0];
  bool owned = false;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    acc = binary_same_dtype<DTypeSet::kNumeric>(acc, *ctx.inputs[i], ctx, f);
    owned = true;
  }
  return owned ? acc : acc.clone();
}

template <class Factory>
OpSchema variadic_schema(const char* op, const char* doc, Factory factory, bool mean = false) {
  OpSchema s;
  s.op_type = op;
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) { infer_broadcast(ctx); };
  s.cpu = [factory, mean](CpuContext& ctx) {
    Tensor acc = fold_inputs(ctx, factory(ctx.node));
    if (mean) {
      int64_t n = 0;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) n += ctx.has_input(i) ? 1 : 0;
      dispatch_dtype<DTypeSet::kNumeric>(acc.dtype(), ctx.node.describe(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        unary_map<T, T>(acc, acc, [n](C v) { return static_cast<C>(v / static_cast<C>(n)); });
      });
    }
    ctx.outputs[0] = acc;
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,  DType::kInt32,
              DType::kInt8,    DType::kUInt8,   DType::kInt16,    DType::kUInt16,  DType::kUInt32, DType::kUInt64};
  s.doc = doc;
  return s;
}

KILNRT_REGISTER_OP(variadic_schema("Max", "elementwise max of all inputs; NaN propagates",
                                   no_attrs([](auto a, auto b) { return nan_max(a, b); })));
KILNRT_REGISTER_OP(variadic_schema("Min", "elementwise min of all inputs; NaN propagates",
                                   no_attrs([](auto a, auto b) { return nan_min(a, b); })));
KILNRT_REGISTER_OP(variadic_schema("Sum", "elementwise sum of all inputs",
                                   no_attrs([](auto a, auto b) { return wrap_add(a, b); })));
KILNRT_REGISTER_OP(variadic_schema("Mean", "elementwise mean of all inputs",
                                   no_attrs([](auto a, auto b) { return wrap_add(a, b); }), true));

}  // namespace
}  // namespace kilnrt::ops
