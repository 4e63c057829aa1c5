// TopK: the k largest (or smallest) elements along an axis with their int64 indices. Outputs are always sorted
// (allowed when sorted=0); equal values keep the lower index first; NaN counts as larger than every number.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "ops/math/elementwise.h"
#include "ops/reduce/reduce_util.h"
#include "ops/shape/shape_util.h"
#include "ops/shape/sym_value.h"

namespace kilnrt::ops {
namespace {

int64_t topk_k(const CpuContext& ctx) {
  if (ctx.node.has_attr("k")) return ctx.node.attr_int("k");  // opset 1
  return read_int_scalar(ctx, 1);
}

void topk_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILNRT_CHECK(x.rank() >= 1, kInvalidModel, ctx.node.describe(), "TopK: input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), x.rank(), ctx.node);
  const bool largest = ctx.node.attr_int("largest", 1) != 0;
  const int64_t k = topk_k(ctx);
  AxisView v = axis_view(x.shape(), axis);
  KILNRT_CHECK(k >= 0 && k <= v.dim, kInvalidArgument, ctx.node.describe(),
               "TopK: k = " << k << " is out of range for an axis of size " << v.dim);
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  Tensor values = Tensor::empty(x.dtype(), out_shape);
  Tensor indices = Tensor::empty(DType::kInt64, out_shape);
  dispatch_dtype<DTypeSet::kNumeric>(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* vout = values.data<T>();
    int64_t* iout = indices.data<int64_t>();
    const int64_t lines = v.outer * v.inner;
    const bool parallel = x.numel() >= kParallelThreshold && lines > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < lines; ++t) {
      const int64_t o = t / v.inner, i = t % v.inner;
      const int64_t base = o * v.dim * v.inner + i;
      std::vector<C> vals(static_cast<size_t>(v.dim));
      for (int64_t j = 0; j < v.dim; ++j) vals[j] = Compute<T>::load(in[base + j * v.inner]);
      std::vector<int64_t> order(static_cast<size_t>(v.dim));
      std::iota(order.begin(), order.end(), 0);
      // "a before b": a ranks higher; ties by lower index.
      auto before = [&vals, largest = largest](int64_t a, int64_t b) {  // explicit: clang 14 + OpenMP
        C va = vals[a], vb = vals[b];
        bool na = va != va, nb = vb != vb;
        if (na || nb) {
          if (na && nb) return a < b;
          return largest ? na : nb;  // NaN is the largest value
        }
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t off = (o * k + j) * v.inner + i;
        vout[off] = in[base + order[j] * v.inner];
        iout[off] = order[j];
      }
    }
  });
  if (ctx.wants_output(0)) ctx.outputs[0] = values;
  if (ctx.wants_output(1)) ctx.outputs[1] = indices;
}

void topk_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    if (ctx.outputs.size() > 1) ctx.set_output_rank_unknown(1, DType::kInt64);
    return;
  }
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()), ctx.node);
  ir::SymShape out = x.shape;
  if (ctx.node.has_attr("k")) {
    out[axis] = ir::Dim(ctx.node.attr_int("k"));
  } else {
    auto k = input_sym_ints(ctx, 1);
    out[axis] = (k && k->size() == 1) ? sym_int_to_shape_dim((*k)[0]) : ir::Dim();
  }
  ctx.set_output(0, x.dtype, out);
  if (ctx.outputs.size() > 1) ctx.set_output(1, DType::kInt64, out);
}

OpSchema topk_schema() {
  OpSchema s;
  s.op_type = "TopK";
  s.since_version = 1;
  s.infer = topk_infer;
  s.cpu = topk_cpu;
  s.dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
              DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kUInt8};
  s.doc = "k largest/smallest along axis, sorted, ties by lower index";
  return s;
}
KILNRT_REGISTER_OP(topk_schema());

}  // namespace
}  // namespace kilnrt::ops
