// Unary elementwise ops: math functions and activations. Each op is a functor factory: given the node (for its
// attributes) it returns a generic lambda computed in the dtype's compute type (float for float16/bfloat16).
#include <cmath>
#include <string>

#include "ops/math/elementwise.h"

namespace kilnrt::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A unary op that keeps its input's dtype.
template <DTypeSet S, class Factory>
OpSchema unary_schema(const char* op, int since, const char* doc, Factory factory) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.infer = infer_same_as_input;
  s.cpu = [factory](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor y = Tensor::empty(x.dtype(), x.shape());
    auto f = factory(ctx.node);
    dispatch_dtype<S>(x.dtype(), ctx.node.describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      unary_map<T, T>(x, y, [&](C v) { return static_cast<C>(f(v)); });
    });
    ctx.outputs[0] = y;
  };
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                  DType::kInt8, DType::kUInt8, DType::kBool})
    if (dtype_in_set(t, S)) s.dtypes.push_back(t);
  s.doc = doc;
  return s;
}

// A float unary predicate (IsNaN, IsInf): bool output.
template <class Factory>
OpSchema predicate_schema(const char* op, int since, const char* doc, Factory factory) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.infer = [](ShapeContext& ctx) {
    const ir::TensorType& in = ctx.input(0);
    if (in.has_shape)
      ctx.set_output(0, DType::kBool, in.shape);
    else
      ctx.set_output_rank_unknown(0, DType::kBool);
  };
  s.cpu = [factory](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor y = Tensor::empty(DType::kBool, x.shape());
    auto f = factory(ctx.node);
    dispatch_dtype<DTypeSet::kFloat>(x.dtype(), ctx.node.describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, bool>(x, y, [&](compute_t<T> v) { return static_cast<bool>(f(v)); });
    });
    ctx.outputs[0] = y;
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
  s.doc = doc;
  return s;
}

template <class C>
C sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

template <class C>
C softplus(C x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

// Clamp that lets NaN through.
template <class C>
C clamp01(C v) {
  if (v < C(0)) return C(0);
  if (v > C(1)) return C(1);
  return v;
}

auto no_attrs = [](auto fn) { return [fn](const ir::Node&) { return fn; }; };

// ---- math ---------------------------------------------------------------------------------------------------
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kSignedNumeric>("Neg", 1, "-x", no_attrs([](auto x) { return -x; })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kNumeric>("Abs", 1, "|x|", no_attrs([](auto x) {
                                                      using C = decltype(x);
                                                      if constexpr (std::is_unsigned_v<C>)
                                                        return x;
                                                      else
                                                        return x < C(0) ? C(-x) : x;
                                                    })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kNumeric>("Sign", 9, "-1, 0 or 1 (NaN stays NaN)", no_attrs([](auto x) {
                                                      using C = decltype(x);
                                                      if (x > C(0)) return C(1);
                                                      if (x < C(0)) return C(-1);
                                                      return x == C(0) ? C(0) : x;  // NaN
                                                    })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Reciprocal", 1, "1/x",
                                                  no_attrs([](auto x) { return decltype(x)(1) / x; })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Sqrt", 1, "sqrt(x)", no_attrs([](auto x) { return std::sqrt(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Exp", 1, "e^x", no_attrs([](auto x) { return std::exp(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Log", 1, "ln(x)", no_attrs([](auto x) { return std::log(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Erf", 9, "erf(x)", no_attrs([](auto x) { return std::erf(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Tanh", 1, "tanh(x)", no_attrs([](auto x) { return std::tanh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Sin", 7, "sin(x)", no_attrs([](auto x) { return std::sin(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Cos", 7, "cos(x)", no_attrs([](auto x) { return std::cos(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Tan", 7, "tan(x)", no_attrs([](auto x) { return std::tan(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Asin", 7, "asin(x)", no_attrs([](auto x) { return std::asin(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Acos", 7, "acos(x)", no_attrs([](auto x) { return std::acos(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Atan", 7, "atan(x)", no_attrs([](auto x) { return std::atan(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Asinh", 9, "asinh(x)",
                                                  no_attrs([](auto x) { return std::asinh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Acosh", 9, "acosh(x)",
                                                  no_attrs([](auto x) { return std::acosh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Atanh", 9, "atanh(x)",
                                                  no_attrs([](auto x) { return std::atanh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kSignedNumeric>("Shrink", 9, "x<-lambd ? x+bias : x>lambd ? x-bias : 0",
                                                          [](const ir::Node& n) {
                                                            double lambd = n.attr_float("lambd", 0.5f),
                                                                   bias = n.attr_float("bias", 0.0f);
                                                            return [lambd, bias](auto x) {
                                                              using C = decltype(x);
                                                              const double v = static_cast<double>(x);
                                                              return v < -lambd ? C(v + bias)
                                                                                : (v > lambd ? C(v - bias) : C(0));
                                                            };
                                                          }));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Sinh", 9, "sinh(x)", no_attrs([](auto x) { return std::sinh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Cosh", 9, "cosh(x)", no_attrs([](auto x) { return std::cosh(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Floor", 1, "floor(x)",
                                                  no_attrs([](auto x) { return std::floor(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Ceil", 1, "ceil(x)", no_attrs([](auto x) { return std::ceil(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Round", 11, "round half to even",
                                                  no_attrs([](auto x) { return std::nearbyint(x); })));

KILNRT_REGISTER_OP(unary_schema<DTypeSet::kInteger>("BitwiseNot", 18, "~x (integers)",
                                                    no_attrs([](auto x) { return ~x; })));
KILNRT_REGISTER_OP(predicate_schema("IsNaN", 9, "x != x", no_attrs([](auto x) { return std::isnan(x); })));
KILNRT_REGISTER_OP(predicate_schema("IsInf", 10, "x is +inf / -inf (detect_positive, detect_negative)",
                                    [](const ir::Node& n) {
                                      bool pos = n.attr_int("detect_positive", 1) != 0;
                                      bool neg = n.attr_int("detect_negative", 1) != 0;
                                      return [pos, neg](auto x) {
                                        return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg));
                                      };
                                    }));

// ---- activations --------------------------------------------------------------------------------------------
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kSignedNumeric>("Relu", 1, "max(x, 0), NaN propagates", no_attrs([](auto x) {
                                                            using C = decltype(x);
                                                            return x < C(0) ? C(0) : x;
                                                          })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Sigmoid", 1, "1/(1+e^-x)",
                                                  no_attrs([](auto x) { return sigmoid(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Swish", 24, "x * sigmoid(alpha * x)", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 1.0f);
  return [alpha](auto x) {
    using C = decltype(x);
    return x * sigmoid(static_cast<C>(C(alpha) * x));
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("LeakyRelu", 1, "x<0 ? alpha*x : x", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 0.01f);
  return [alpha](auto x) {
    using C = decltype(x);
    return x < C(0) ? C(alpha) * x : x;
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Elu", 1, "x<0 ? alpha*(e^x-1) : x", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 1.0f);
  return [alpha](auto x) {
    using C = decltype(x);
    return x < C(0) ? C(alpha) * std::expm1(x) : x;
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Selu", 1, "gamma*(x<=0 ? alpha*(e^x-1) : x)", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 1.67326319217681884765625f);
  double gamma = n.attr_float("gamma", 1.05070102214813232421875f);
  return [alpha, gamma](auto x) {
    using C = decltype(x);
    return x <= C(0) ? C(gamma) * (C(alpha) * std::exp(x) - C(alpha)) : C(gamma) * x;
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Celu", 12, "max(0,x) + min(0, alpha*(e^(x/alpha)-1))",
                                                  [](const ir::Node& n) {
                                                    double alpha = n.attr_float("alpha", 1.0f);
                                                    return [alpha](auto x) {
                                                      using C = decltype(x);
                                                      if (x > C(0)) return x;
                                                      return C(alpha) * std::expm1(x / C(alpha));
                                                    };
                                                  }));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Softplus", 1, "ln(1+e^x)",
                                                  no_attrs([](auto x) { return softplus(x); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Softsign", 1, "x/(1+|x|)", no_attrs([](auto x) {
                                                    using C = decltype(x);
                                                    return x / (C(1) + std::fabs(x));
                                                  })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("HardSigmoid", 1, "clamp(alpha*x+beta, 0, 1)", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 0.2f);
  double beta = n.attr_float("beta", 0.5f);
  return [alpha, beta](auto x) {
    using C = decltype(x);
    return clamp01(C(alpha) * x + C(beta));
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("HardSwish", 14, "x*clamp(x/6+0.5, 0, 1)", no_attrs([](auto x) {
                                                    using C = decltype(x);
                                                    return x * clamp01(x * C(1.0 / 6.0) + C(0.5));
                                                  })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Mish", 18, "x*tanh(softplus(x))",
                                                  no_attrs([](auto x) { return x * std::tanh(softplus(x)); })));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("ThresholdedRelu", 10, "x>alpha ? x : 0", [](const ir::Node& n) {
  double alpha = n.attr_float("alpha", 1.0f);
  return [alpha](auto x) {
    using C = decltype(x);
    return x > C(alpha) ? x : (std::isnan(x) ? x : C(0));
  };
}));
KILNRT_REGISTER_OP(unary_schema<DTypeSet::kFloat>("Gelu", 20, "x*Phi(x), approximate none|tanh", [](const ir::Node& n) {
  std::string approx = n.attr_string("approximate", std::string("none"));
  KILNRT_CHECK(approx == "none" || approx == "tanh", kInvalidModel, n.describe(),
               "Gelu: approximate must be 'none' or 'tanh', got '" << approx << "'");
  bool use_tanh = approx == "tanh";
  return [use_tanh](auto x) {
    using C = decltype(x);
    if (use_tanh) {
      const C k = C(std::sqrt(2.0 / kPi));
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * C(1.0 / std::sqrt(2.0))));
  };
}));

// ---- Clip: bounds from attributes (opset < 11) or optional scalar inputs ---------------------------------------
void clip_infer(ShapeContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (in.has_shape)
    ctx.set_output(0, in.dtype, in.shape);
  else
    ctx.set_output_rank_unknown(0, in.dtype);
}

void clip_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    KILNRT_CHECK(
        ctx.inputs[i]->numel() == 1, kInvalidModel, ctx.node.describe(),
        "Clip: bound input " << i << " must be a scalar, got shape " << shape_to_string(ctx.inputs[i]->shape()));
    KILNRT_CHECK(ctx.inputs[i]->dtype() == x.dtype(), kInvalidModel, ctx.node.describe(),
                 "Clip: bound input " << i << " has dtype " << dtype_name(ctx.inputs[i]->dtype()) << ", expected "
                                      << dtype_name(x.dtype()));
  }
  dispatch_dtype<DTypeSet::kNumeric>(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    C lo, hi;
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    } else {
      lo = std::numeric_limits<C>::lowest();
      hi = std::numeric_limits<C>::max();
    }
    if (ctx.node.has_attr("min")) lo = static_cast<C>(ctx.node.attr_float("min"));
    if (ctx.node.has_attr("max")) hi = static_cast<C>(ctx.node.attr_float("max"));
    if (ctx.has_input(1)) lo = Compute<T>::load(ctx.inputs[1]->data<T>()[0]);
    if (ctx.has_input(2)) hi = Compute<T>::load(ctx.inputs[2]->data<T>()[0]);
    unary_map<T, T>(x, y, [lo, hi](C v) {
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      return v;
    });
  });
  ctx.outputs[0] = y;
}

OpSchema clip_schema() {
  OpSchema s;
  s.op_type = "Clip";
  s.since_version = 1;
  s.infer = clip_infer;
  s.cpu = clip_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
              DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kUInt8};
  s.doc = "clamp(x, min, max); NaN propagates";
  return s;
}
KILNRT_REGISTER_OP(clip_schema());

}  // namespace
}  // namespace kilnrt::ops
