// ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp.
// Axes come from the 'axes' attribute (older opsets) or the optional second input (opset 18, ReduceSum 13);
// keepdims (default 1); noop_with_empty_axes (empty axes: identity instead of reducing everything).
// Floats accumulate in double; integer Sum/Prod/Max/Min accumulate exactly in int64.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "ops/common/double_io.h"
#include "ops/math/elementwise.h"
#include "ops/reduce/reduce_util.h"
#include "ops/shape/shape_util.h"

namespace kilnrt::ops {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Integer inputs keep exact int64 accumulation for these kinds; the others go through double.
constexpr bool exact_for_ints(ReduceKind k) {
  return k == ReduceKind::kSum || k == ReduceKind::kProd || k == ReduceKind::kMax || k == ReduceKind::kMin ||
         k == ReduceKind::kSumSquare || k == ReduceKind::kL1;
}

template <ReduceKind K, class T>
using acc_t = std::conditional_t<!is_float_storage_v<T> && exact_for_ints(K), int64_t, double>;

template <ReduceKind K, class T>
compute_t<T> reduce_one(const T* in, int64_t base, const std::vector<int64_t>& offs) {
  using A = acc_t<K, T>;
  using C = compute_t<T>;
  // A floating accumulator into an integer result: no undefined behaviour for NaN / out-of-range (fuzz finding).
  auto to_c = [](A v) -> C {
    if constexpr (std::is_floating_point_v<A> && std::is_integral_v<C>)
      return saturate_to_int<C>(static_cast<double>(v));
    else
      return static_cast<C>(v);
  };
  const size_t n = offs.size();
  auto at = [&](size_t k) { return static_cast<A>(Compute<T>::load(in[base + offs[k]])); };
  A acc{};
  if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
    if constexpr (std::is_floating_point_v<A>)
      acc = K == ReduceKind::kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    else
      acc = K == ReduceKind::kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    for (size_t k = 0; k < n; ++k) {
      A v = at(k);
      if (v != v) return to_c(v);  // NaN propagates
      if (K == ReduceKind::kMax ? v > acc : v < acc) acc = v;
    }
  } else if constexpr (K == ReduceKind::kProd) {
    acc = 1;
    for (size_t k = 0; k < n; ++k) acc *= at(k);
  } else if constexpr (K == ReduceKind::kLogSumExp) {
    A m = -std::numeric_limits<A>::infinity();
    for (size_t k = 0; k < n; ++k) {
      A v = at(k);
      if (v != v) return to_c(v);
      if (v > m) m = v;
    }
    if (std::isinf(m)) return to_c(m);  // empty, all -inf, or +inf present
    for (size_t k = 0; k < n; ++k) acc += std::exp(at(k) - m);
    acc = m + std::log(acc);
  } else {
    for (size_t k = 0; k < n; ++k) {
      A v = at(k);
      if constexpr (K == ReduceKind::kL1)
        acc += v < 0 ? -v : v;
      else if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare)
        acc += v * v;
      else
        acc += v;
    }
    if constexpr (K == ReduceKind::kMean) {
      if (n == 0) {
        if constexpr (std::is_floating_point_v<C>)
          return std::numeric_limits<C>::quiet_NaN();
        else
          return C(0);
      }
      acc /= static_cast<A>(n);
    }
    if constexpr (K == ReduceKind::kL2) acc = std::sqrt(acc);
    if constexpr (K == ReduceKind::kLogSum) acc = std::log(acc);
  }
  return to_c(acc);
}

// The axes a node reduces (normalised), or nullopt for "identity" (empty axes with noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes(const CpuContext& ctx, int64_t rank) {
  std::vector<int64_t> axes = axes_for_cpu(ctx, "axes", 1).value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    if (ctx.node.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  return normalize_axes(axes, rank, ctx.node);
}

template <ReduceKind K>
void reduce_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto axes = reduce_axes(ctx, x.rank());
  if (!axes) {
    ctx.outputs[0] = x;
    return;
  }
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  ReduceLayout L = make_reduce_layout(x.shape(), *axes, keepdims);
  Tensor y = Tensor::empty(x.dtype(), L.out_shape);
  if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
    if (x.dtype() == DType::kBool) {  // opset 20: max = any (empty: false), min = all (empty: true)
      const bool* in = x.data<bool>();
      bool* out = y.data<bool>();
      for (size_t o = 0; o < L.base_offsets.size(); ++o) {
        bool acc = K == ReduceKind::kMin;
        for (int64_t off : L.reduce_offsets) {
          const bool v = in[L.base_offsets[o] + off];
          acc = K == ReduceKind::kMax ? (acc || v) : (acc && v);
        }
        out[o] = acc;
      }
      ctx.outputs[0] = y;
      return;
    }
  }
  dispatch_dtype<DTypeSet::kNumeric>(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t n_out = static_cast<int64_t>(L.base_offsets.size());
    const bool parallel = x.numel() >= kParallelThreshold && n_out > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < n_out; ++o)
      out[o] = Compute<T>::store(reduce_one<K, T>(in, L.base_offsets[o], L.reduce_offsets));
  });
  ctx.outputs[0] = y;
}

void reduce_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  bool unknown = false;
  auto axes = axes_for_infer(ctx, "axes", 1, &unknown);
  if (unknown) {  // axes computed at run time: with keepdims the rank is known
    if (keepdims)
      ctx.set_output(0, x.dtype, ir::SymShape(static_cast<size_t>(rank)));
    else
      ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  std::vector<int64_t> ax = axes.value_or(std::vector<int64_t>{});
  if (ax.empty()) {
    if (ctx.node.attr_int("noop_with_empty_axes", 0) != 0) {
      ctx.set_output(0, x.dtype, x.shape);
      return;
    }
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  ax = normalize_axes(ax, rank, ctx.node);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : ax) reduced[a] = true;
  ir::SymShape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      out.push_back(x.shape[d]);
    else if (keepdims)
      out.push_back(ir::Dim(1));
  }
  ctx.set_output(0, x.dtype, out);
}

template <ReduceKind K>
OpSchema reduce_schema(const char* op, const char* doc) {
  OpSchema s;
  s.op_type = op;
  s.since_version = 1;
  s.infer = reduce_infer;
  s.cpu = reduce_cpu<K>;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
              DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kUInt8};
  s.doc = doc;
  return s;
}

KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kSum>("ReduceSum", "sum over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kMean>("ReduceMean", "mean over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kMax>("ReduceMax", "max over axes (NaN propagates)"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kMin>("ReduceMin", "min over axes (NaN propagates)"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kProd>("ReduceProd", "product over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kL1>("ReduceL1", "sum of |x| over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kL2>("ReduceL2", "sqrt of the sum of squares over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kSumSquare>("ReduceSumSquare", "sum of squares over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kLogSum>("ReduceLogSum", "log of the sum over axes"));
KILNRT_REGISTER_OP(reduce_schema<ReduceKind::kLogSumExp>("ReduceLogSumExp", "log(sum(exp(x))) over axes, stable"));

}  // namespace
}  // namespace kilnrt::ops
