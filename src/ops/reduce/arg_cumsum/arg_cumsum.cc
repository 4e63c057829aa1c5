// ArgMax / ArgMin (keepdims, select_last_index; the first NaN wins, as in numpy), CumSum and CumProd (exclusive,
// reverse).
#include <string>

#include "ops/math/elementwise.h"
#include "ops/reduce/reduce_util.h"
#include "ops/shape/shape_util.h"

namespace kilnrt::ops {
namespace {

// ---- ArgMax / ArgMin ----------------------------------------------------------------------------------------
template <bool kMax>
void arg_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int rank = x.rank();
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), rank == 0 ? 1 : rank, ctx.node);
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  const bool last = ctx.node.attr_int("select_last_index", 0) != 0;
  AxisView v = axis_view(x.shape(), axis);
  Shape out_shape;
  for (int d = 0; d < rank; ++d) {
    if (d != axis)
      out_shape.push_back(x.shape()[d]);
    else if (keepdims)
      out_shape.push_back(1);
  }
  Tensor y = Tensor::empty(DType::kInt64, out_shape);
  KILNRT_CHECK(v.dim > 0 || y.numel() == 0, kInvalidArgument, ctx.node.describe(),
               ctx.node.op_type << ": cannot reduce an empty axis");
  dispatch_dtype<DTypeSet::kNumeric>(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    int64_t* out = y.data<int64_t>();
    const int64_t n_out = v.outer * v.inner;
    const bool parallel = x.numel() >= kParallelThreshold && n_out > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < n_out; ++t) {
      const int64_t o = t / v.inner, i = t % v.inner;
      const T* p = in + o * v.dim * v.inner + i;
      int64_t best_k = 0;
      C best = Compute<T>::load(p[0]);
      bool best_nan = best != best;
      for (int64_t k = 1; k < v.dim; ++k) {
        C c = Compute<T>::load(p[k * v.inner]);
        bool c_nan = c != c;
        bool better;
        if (best_nan)
          better = last && c_nan;
        else if (c_nan)
          better = true;
        else
          better = kMax ? (c > best || (last && c == best)) : (c < best || (last && c == best));
        if (better) {
          best = c;
          best_k = k;
          best_nan = c_nan;
        }
      }
      out[t] = best_k;
    }
  });
  ctx.outputs[0] = y;
}

void arg_infer(ShapeContext& ctx) {
  auto in = input_shape(ctx, 0);
  if (!in) {
    ctx.set_output_rank_unknown(0, DType::kInt64);
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), rank == 0 ? 1 : rank, ctx.node);
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  ir::SymShape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      out.push_back((*in)[d]);
    else if (keepdims)
      out.push_back(ir::Dim(1));
  }
  ctx.set_output(0, DType::kInt64, out);
}

template <bool kMax>
OpSchema arg_schema(const char* op, const char* doc) {
  OpSchema s;
  s.op_type = op;
  s.since_version = 1;
  s.infer = arg_infer;
  s.cpu = arg_cpu<kMax>;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
              DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kUInt8};
  s.doc = doc;
  return s;
}
KILNRT_REGISTER_OP(arg_schema<true>("ArgMax", "index of the max along axis (int64; ties: first, or last)"));
KILNRT_REGISTER_OP(arg_schema<false>("ArgMin", "index of the min along axis (int64; ties: first, or last)"));

// ---- CumSum / CumProd ---------------------------------------------------------------------------------------
// kProduct: CumProd (opset 26): the running product (exclusive: starts from 1); else CumSum.
// Integer accumulation wraps (int64 arithmetic through uint64: signed overflow is undefined in C++).
template <bool kProduct, class A>
A combine(A acc, A val) {
  if constexpr (std::is_integral_v<A>) {
    const uint64_t a = static_cast<uint64_t>(acc), b = static_cast<uint64_t>(val);
    return static_cast<A>(kProduct ? a * b : a + b);
  } else {
    return kProduct ? acc * val : acc + val;
  }
}

template <bool kProduct>
void cumulative_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() >= 1, kInvalidModel, ctx.node.describe(), ctx.node.op_type << ": input must have rank >= 1");
  const int64_t axis = normalize_axis(read_int_scalar(ctx, 1), x.rank(), ctx.node);
  const bool exclusive = ctx.node.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node.attr_int("reverse", 0) != 0;
  AxisView v = axis_view(x.shape(), axis);
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  dispatch_dtype<DTypeSet::kNumeric>(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<is_float_storage_v<T>, double, int64_t>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t lines = v.outer * v.inner;
    const bool parallel = x.numel() >= kParallelThreshold && lines > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < lines; ++t) {
      const int64_t o = t / v.inner, i = t % v.inner;
      const int64_t base = o * v.dim * v.inner + i;
      A acc = kProduct ? A(1) : A(0);
      for (int64_t s = 0; s < v.dim; ++s) {
        const int64_t k = reverse ? v.dim - 1 - s : s;
        const int64_t off = base + k * v.inner;
        A val = static_cast<A>(Compute<T>::load(in[off]));
        if (exclusive) {
          out[off] = Compute<T>::store(static_cast<compute_t<T>>(acc));
          acc = combine<kProduct, A>(acc, val);
        } else {
          acc = combine<kProduct, A>(acc, val);
          out[off] = Compute<T>::store(static_cast<compute_t<T>>(acc));
        }
      }
    }
  });
  ctx.outputs[0] = y;
}

template <bool kProduct>
OpSchema cumulative_schema() {
  OpSchema s;
  s.op_type = kProduct ? "CumProd" : "CumSum";
  s.since_version = kProduct ? 26 : 11;
  s.infer = [](ShapeContext& ctx) { set_output_type(ctx, 0, ctx.input(0).dtype, input_shape(ctx, 0)); };
  s.cpu = cumulative_cpu<kProduct>;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32};
  s.doc = kProduct ? "cumulative product along axis (exclusive, reverse)"
                   : "cumulative sum along axis (exclusive, reverse)";
  return s;
}
KILNRT_REGISTER_OP(cumulative_schema<false>());
KILNRT_REGISTER_OP(cumulative_schema<true>());

}  // namespace
}  // namespace kilnrt::ops
