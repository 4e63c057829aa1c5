// ONNX TensorScatter (opset 24): writes `update` into a copy of `past_cache` along `axis` (default -2; not the
// batch axis 0), at write_indices[b] + s for batch b (write_indices [B], default zeros); mode "circular" wraps the
// position modulo the cache length, "linear" (default) requires it to fit. Other dims must match. Any dtype.
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

void tensor_scatter_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& cache = ctx.input(0);
  const Tensor& update = ctx.input(1);
  const Shape& cs = cache.shape();
  const Shape& us = update.shape();
  const int64_t rank = static_cast<int64_t>(cs.size());
  const std::string mode = node.attr_string("mode", "linear");
  KILNRT_CHECK(mode == "linear" || mode == "circular", kInvalidModel, node.describe(),
               "mode must be linear or circular, got '" << mode << "'");
  KILNRT_CHECK(update.dtype() == cache.dtype() && us.size() == cs.size() && rank >= 2, kInvalidModel, node.describe(),
               "update " << shape_to_string(us) << " must have past_cache's dtype and rank (>= 2)");
  const int64_t axis = normalize_axis(node.attr_int("axis", -2), rank, node);
  KILNRT_CHECK(axis >= 1, kInvalidModel, node.describe(), "axis must not be the batch axis 0");
  for (int64_t d = 0; d < rank; ++d)
    KILNRT_CHECK(d == axis ? us[d] <= cs[d] : us[d] == cs[d], kInvalidModel, node.describe(),
                 "update " << shape_to_string(us) << " does not fit past_cache " << shape_to_string(cs)
                           << " along axis " << axis);
  const int64_t batch = cs[0];
  std::vector<int64_t> idx(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    idx = tensor_to_int64s(ctx.input(2));
    KILNRT_CHECK(static_cast<int64_t>(idx.size()) == batch, kInvalidModel, node.describe(),
                 "write_indices has " << idx.size() << " values, expected the batch size " << batch);
  }
  const int64_t max_len = cs[axis], len = us[axis];
  int64_t prefix = 1, inner = 1;
  for (int64_t d = 1; d < axis; ++d) prefix *= cs[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= cs[d];
  const size_t row = static_cast<size_t>(inner) * dtype_size(cache.dtype());
  Tensor out = cache.clone();
  auto* dst = static_cast<uint8_t*>(out.raw());
  const auto* src = static_cast<const uint8_t*>(update.raw());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < len; ++s) {
      int64_t pos = idx[b] + s;
      if (mode == "circular") pos = ((pos % max_len) + max_len) % max_len;
      KILNRT_CHECK(pos >= 0 && pos < max_len, kInvalidArgument, node.describe(),
                   "write position " << pos << " of batch " << b << " is outside the cache length " << max_len
                                     << " (mode linear)");
      for (int64_t p = 0; p < prefix; ++p) {
        const int64_t d_off = ((b * prefix + p) * max_len + pos) * inner;
        const int64_t s_off = ((b * prefix + p) * len + s) * inner;
        if (row > 0) std::memcpy(dst + d_off * dtype_size(cache.dtype()), src + s_off * dtype_size(cache.dtype()), row);
      }
    }
  }
  ctx.outputs[0] = out;
}

void infer_tensor_scatter(ShapeContext& ctx) {
  const ir::TensorType& c = ctx.input(0);
  if (c.has_shape)
    ctx.set_output(0, c.dtype, c.shape);
  else
    ctx.set_output_rank_unknown(0, c.dtype);
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"",
                            "TensorScatter",
                            24,
                            1000,
                            infer_tensor_scatter,
                            tensor_scatter_cpu,
                            {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt64, DType::kInt32},
                            "KV-cache write: update into past_cache at write_indices along axis (linear/circular)"});

}  // namespace kilnrt::ops
