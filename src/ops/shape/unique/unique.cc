// Unique (opset 11; outputs Y, indices, inverse_indices, counts; flattened or along an axis; sorted or in order of
// first occurrence; output size depends on the data) and ReverseSequence (10).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

void unique_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const bool sorted = node.attr_int("sorted", 1) != 0;
  const bool has_axis = node.attrs.count("axis") > 0;
  Shape shape = x.shape();
  int64_t axis = 0;
  if (has_axis)
    axis = normalize_axis(node.attr_int("axis"), x.rank(), node);
  else
    shape = {x.numel()};
  const auto ax = static_cast<size_t>(axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= shape[d];
  for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[ax];
  const std::vector<double> v = tensor_to_doubles(x, node);
  // Slice k = elements (o, k, i) for all o, i: compared lexicographically as doubles.
  auto elem = [&](int64_t k, int64_t j) { return v[static_cast<size_t>(((j / inner) * n + k) * inner + j % inner)]; };
  const int64_t slice = outer * inner;
  // numpy.unique (ONNX's reference): values sort with NaN after every number, which makes `less` a strict weak
  // order. Flattened, NaNs are one value (equal_nan); along an axis numpy compares slices as records, where
  // NaN != NaN, so a slice holding a NaN equals no other slice.
  auto order3 = [](double a, double b) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return static_cast<int>(na) - static_cast<int>(nb);
    return a < b ? -1 : (b < a ? 1 : 0);
  };
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < slice; ++j) {
      const int c = order3(elem(a, j), elem(b, j));
      if (c != 0) return c < 0;
    }
    return false;
  };
  std::vector<bool> has_nan(static_cast<size_t>(n), false);
  if (has_axis)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < slice && !has_nan[static_cast<size_t>(k)]; ++j)
        has_nan[static_cast<size_t>(k)] = std::isnan(elem(k, j));
  auto equal = [&](int64_t a, int64_t b) {
    if (has_nan[static_cast<size_t>(a)] || has_nan[static_cast<size_t>(b)]) return false;
    return !less(a, b) && !less(b, a);
  };
  std::vector<int64_t> firsts;  // first occurrence of each distinct slice, in order of occurrence
  std::vector<int64_t> inverse(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t found = -1;
    for (size_t u = 0; u < firsts.size(); ++u)
      if (equal(firsts[u], k)) {
        found = static_cast<int64_t>(u);
        break;
      }
    if (found < 0) {
      found = static_cast<int64_t>(firsts.size());
      firsts.push_back(k);
    }
    inverse[static_cast<size_t>(k)] = found;
  }
  std::vector<int64_t> order(firsts.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less(firsts[a], firsts[b]); });
  std::vector<int64_t> rank_of(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank_of[static_cast<size_t>(order[r])] = static_cast<int64_t>(r);
  const int64_t u = static_cast<int64_t>(order.size());
  std::vector<int64_t> indices(static_cast<size_t>(u)), counts(static_cast<size_t>(u), 0);
  for (int64_t r = 0; r < u; ++r) indices[static_cast<size_t>(r)] = firsts[static_cast<size_t>(order[r])];
  for (int64_t& i : inverse) {
    i = rank_of[static_cast<size_t>(i)];
    ++counts[static_cast<size_t>(i)];
  }
  Shape yshape = shape;
  yshape[ax] = u;
  Tensor y = Tensor::empty(x.dtype(), yshape);
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < u; ++r)
      std::memcpy(dst + static_cast<size_t>((o * u + r) * inner) * es,
                  src + static_cast<size_t>((o * n + indices[static_cast<size_t>(r)]) * inner) * es,
                  static_cast<size_t>(inner) * es);
  ctx.outputs[0] = y;
  if (ctx.wants_output(1)) ctx.outputs[1] = Tensor::from_vector(indices, DType::kInt64, {u});
  if (ctx.wants_output(2)) ctx.outputs[2] = Tensor::from_vector(inverse, DType::kInt64, {n});
  if (ctx.wants_output(3)) ctx.outputs[3] = Tensor::from_vector(counts, DType::kInt64, {u});
}

void infer_unique(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const bool has_axis = ctx.node.attrs.count("axis") > 0;
  if (has_axis && x.has_shape) {
    ir::SymShape s = x.shape;
    s[static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis"), static_cast<int64_t>(s.size()), ctx.node))] =
        ir::Dim();
    ctx.set_output(0, x.dtype, s);
  } else if (has_axis) {
    ctx.set_output_rank_unknown(0, x.dtype);
  } else {
    ctx.set_output(0, x.dtype, {ir::Dim()});
  }
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) ctx.set_output(i, DType::kInt64, {ir::Dim()});
}

KILNRT_REGISTER_OP(OpSchema{
    "",
    "Unique",
    11,
    1000,
    infer_unique,
    unique_cpu,
    {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8},
    "distinct elements or slices (sorted or by first occurrence), indices, inverse, counts"});

// ---- ReverseSequence --------------------------------------------------------------------------------------------

void reverse_sequence_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> lens = tensor_to_int64s(ctx.input(1));
  const int64_t batch_axis = normalize_axis(node.attr_int("batch_axis", 1), x.rank(), node);
  const int64_t time_axis = normalize_axis(node.attr_int("time_axis", 0), x.rank(), node);
  KILNRT_CHECK(batch_axis != time_axis && x.rank() >= 2, kInvalidModel, node.describe(),
               "batch_axis and time_axis must differ");
  const Shape& s = x.shape();
  KILNRT_CHECK(static_cast<int64_t>(lens.size()) == s[static_cast<size_t>(batch_axis)], kInvalidArgument,
               node.describe(), "sequence_lens has " << lens.size() << " values for a batch of " << s[batch_axis]);
  Tensor y = Tensor::empty(x.dtype(), s);
  const size_t es = dtype_size(x.dtype());
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) strides[d - 1] = strides[d] * s[d];
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    const int64_t b = idx[static_cast<size_t>(batch_axis)], t = idx[static_cast<size_t>(time_axis)];
    const int64_t len = std::min(lens[static_cast<size_t>(b)], s[static_cast<size_t>(time_axis)]);
    const int64_t st = t < len ? len - 1 - t : t;
    const int64_t from = flat + (st - t) * strides[static_cast<size_t>(time_axis)];
    std::memcpy(dst + static_cast<size_t>(flat) * es, src + static_cast<size_t>(from) * es, es);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  ctx.outputs[0] = y;
}

void infer_same(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, x.dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, x.dtype);
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "ReverseSequence",
                            10,
                            1000,
                            infer_same,
                            reverse_sequence_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt64, DType::kInt32,
                             DType::kInt8, DType::kUInt8, DType::kBool},
                            "reverses the first sequence_lens[b] steps along time_axis of each batch entry"});

}  // namespace
}  // namespace kilnrt::ops
