// Cast and CastLike across every kilnrt dtype; BitCast (the same bytes as another dtype of the same width).
//   float -> integer: truncation toward zero, clamped to the target's range; NaN -> 0 (ONNX leaves it undefined)
//   float / integer -> bool: x != 0 (NaN -> true)
//   bool -> number: 0 / 1
//   integer -> narrower integer: wraps (two's complement), as numpy's astype does
//   -> bfloat16: truncation (low 16 bits of the float32 dropped) up to opset 18, as ONNX's reference; from Cast-19
//      on, round to nearest even
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ops/math/elementwise.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

// Storage value -> a wide value that keeps it exactly: double for floats, int64/uint64 for integers, bool for bool.
template <class S>
auto widen(S v) {
  if constexpr (std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16>) {
    return static_cast<double>(Compute<S>::load(v));
  } else if constexpr (std::is_floating_point_v<S>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same_v<S, bool>) {
    return v;
  } else if constexpr (std::is_unsigned_v<S>) {
    return static_cast<uint64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

template <class D, class W>
D narrow(W w) {
  if constexpr (std::is_same_v<D, bool>) {
    return w != W(0);
  } else if constexpr (std::is_same_v<D, Float16> || std::is_same_v<D, BFloat16>) {
    return Compute<D>::store(static_cast<float>(w));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(w);
  } else if constexpr (std::is_floating_point_v<W>) {
    // float -> integer: truncate, clamp to int64, then wrap into D like an integer conversion.
    if (std::isnan(w)) return D(0);
    double t = std::trunc(w);
    int64_t i;
    if (t >= 9223372036854775807.0)
      i = std::numeric_limits<int64_t>::max();
    else if (t <= -9223372036854775808.0)
      i = std::numeric_limits<int64_t>::min();
    else
      i = static_cast<int64_t>(t);
    return static_cast<D>(i);
  } else {
    return static_cast<D>(w);  // integer/bool -> integer
  }
}

// float32 -> bfloat16 by dropping the low 16 bits (NaN stays a quiet NaN).
uint16_t bfloat16_truncate(float f) {
  if (std::isnan(f)) return std::signbit(f) ? 0xffc0 : 0x7fc0;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// Cast to bfloat16: up to opset 18 the spec leaves the rounding open and ONNX's reference (and its 1.12 test data)
// truncates; Cast-19 specifies round-to-nearest-even. `opset` selects which (docs/operators.md).
Tensor cast_tensor(const Tensor& x, DType to, const std::string& where, int64_t opset = 19) {
  if (x.dtype() == to) return x;  // same dtype: a view
  if (to == DType::kBFloat16 && opset < 19 && x.dtype() != DType::kBool) {
    Tensor f = cast_tensor(x, DType::kFloat32, where, opset);
    Tensor y = Tensor::empty(to, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data<uint16_t>()[i] = bfloat16_truncate(f.data<float>()[i]);
    return y;
  }
  Tensor y = Tensor::empty(to, x.shape());
  dispatch_dtype<DTypeSet::kAll>(x.dtype(), where, [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    dispatch_dtype<DTypeSet::kAll>(to, where, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* in = x.data<S>();
      D* out = y.data<D>();
      parallel_for_range(x.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = narrow<D>(widen(in[i]));
      });
    });
  });
  return y;
}

void cast_infer_to(ShapeContext& ctx, DType to) {
  const ir::TensorType& in = ctx.input(0);
  if (in.has_shape)
    ctx.set_output(0, to, in.shape);
  else
    ctx.set_output_rank_unknown(0, to);
  // Shape values survive casts between integer types (and to float they would lose their meaning as dims).
  if ((to == DType::kInt64 || to == DType::kInt32) && (in.dtype == DType::kInt64 || in.dtype == DType::kInt32)) {
    if (auto v = input_sym_ints(ctx, 0)) set_output_sym_ints(ctx, 0, *v);
  }
}

DType cast_target(const ir::Node& node) {
  int64_t to = node.attr_int("to");
  KILNRT_CHECK(dtype_is_valid(static_cast<int32_t>(to)), kUnsupported, node.describe(),
               "Cast: target type " << to << " (ONNX TensorProto.DataType) is not supported by kilnrt");
  return static_cast<DType>(to);
}

OpSchema cast_schema() {
  OpSchema s;
  s.op_type = "Cast";
  s.since_version = 1;
  s.infer = [](ShapeContext& ctx) { cast_infer_to(ctx, cast_target(ctx.node)); };
  s.cpu = [](CpuContext& ctx) {
    ctx.outputs[0] = cast_tensor(ctx.input(0), cast_target(ctx.node), ctx.node.describe(), ctx.opset);
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool,    DType::kInt16,
              DType::kUInt16,  DType::kUInt32,  DType::kUInt64};
  s.doc =
      "converts to the dtype of attribute 'to' (float->int truncates toward zero; ->bfloat16 truncates before opset "
      "19)";
  return s;
}
KILNRT_REGISTER_OP(cast_schema());

OpSchema cast_like_schema() {
  OpSchema s;
  s.op_type = "CastLike";
  s.since_version = 15;
  s.infer = [](ShapeContext& ctx) { cast_infer_to(ctx, ctx.input(1).dtype); };
  s.cpu = [](CpuContext& ctx) {
    ctx.outputs[0] = cast_tensor(ctx.input(0), ctx.input(1).dtype(), ctx.node.describe(), ctx.opset);
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool,    DType::kInt16,
              DType::kUInt16,  DType::kUInt32,  DType::kUInt64};
  s.doc = "converts input 0 to the dtype of input 1";
  return s;
}
KILNRT_REGISTER_OP(cast_like_schema());

// BitCast (opset 26): the same bytes read as dtype 'to' of the same width; the shape is kept.
OpSchema bitcast_schema() {
  OpSchema s;
  s.op_type = "BitCast";
  s.since_version = 26;
  s.infer = [](ShapeContext& ctx) {
    const DType to = cast_target(ctx.node);
    const ir::TensorType& in = ctx.input(0);
    KILNRT_CHECK(in.dtype == DType::kUndefined || dtype_size(in.dtype) == dtype_size(to), kInvalidModel,
                 ctx.node.describe(),
                 "BitCast needs dtypes of the same width: " << dtype_name(in.dtype) << " -> " << dtype_name(to));
    if (in.has_shape)
      ctx.set_output(0, to, in.shape);
    else
      ctx.set_output_rank_unknown(0, to);
  };
  s.cpu = [](CpuContext& ctx) {
    const Tensor& x = ctx.input(0);
    const DType to = cast_target(ctx.node);
    KILNRT_CHECK(dtype_size(x.dtype()) == dtype_size(to), kInvalidModel, ctx.node.describe(),
                 "BitCast needs dtypes of the same width: " << dtype_name(x.dtype()) << " -> " << dtype_name(to));
    ctx.outputs[0] = Tensor::from_data(x.raw(), to, x.shape());
  };
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
              DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool,    DType::kInt16,
              DType::kUInt16,  DType::kUInt32,  DType::kUInt64};
  s.doc = "reinterprets the bytes as dtype 'to' of the same width (shape kept)";
  return s;
}
KILNRT_REGISTER_OP(bitcast_schema());

}  // namespace
}  // namespace kilnrt::ops
