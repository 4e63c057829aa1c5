// CPU reference of com.kilnrt:EmbedLayerNorm (made by passes/fuse_embed_layernorm: Gather -> Add -> LayerNorm):
//   Y [ids..., H] = LayerNorm over H of (table [V, H] [ids] + addend) * scale [H] + bias [H]
// ids int64 / int32 of any shape (negative indices count from the end, as Gather's); the addend broadcasts along
// the leading dims only (its shape without leading 1s is a suffix of Y's), so row r of Y takes addend row
// r % (addend elements / H). Mean and variance in double, two passes. attribute epsilon (1e-5).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/embed_layernorm/embed_layernorm.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void infer_embed_layernorm(ShapeContext& ctx) {
  const ir::TensorType& ids = ctx.input(0);
  const ir::TensorType& table = ctx.input(1);
  if (!ids.has_shape || !table.has_shape) {
    ctx.set_output_rank_unknown(0, table.dtype);
    return;
  }
  KILNRT_CHECK(table.shape.size() == 2, kInvalidArgument, ctx.node.describe(),
               "the table must have rank 2, got " << ir::sym_shape_to_string(table.shape));
  ir::SymShape out = ids.shape;
  out.push_back(table.shape[1]);
  ctx.set_output(0, table.dtype, out);
}

void embed_layernorm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const std::string where = node.describe();
  const Tensor& ids_t = ctx.input(0);
  KILNRT_CHECK(ids_t.dtype() == DType::kInt64 || ids_t.dtype() == DType::kInt32, kInvalidArgument, where,
               "ids must be int64 or int32, got " << dtype_name(ids_t.dtype()));
  const DType dtype = ctx.input(1).dtype();
  const Tensor table = to_float32(ctx.input(1), node, "table");
  KILNRT_CHECK(table.rank() == 2, kInvalidArgument, where,
               "the table must have rank 2, got " << shape_to_string(table.shape()));
  const int64_t vocab = table.shape()[0], h = table.shape()[1];
  const Tensor addend = to_float32(ctx.input(2), node, "addend");
  const Tensor scale = to_float32(ctx.input(3), node, "scale");
  Tensor bias;
  if (ctx.has_input(4)) bias = to_float32(ctx.input(4), node, "bias");
  Shape out_shape = ids_t.shape();
  out_shape.push_back(h);
  const Shape& as = addend.shape();
  KILNRT_CHECK(addend_broadcasts_along_leading_dims(as, ir::shape_to_sym(out_shape)), kInvalidArgument, where,
               "the addend " << shape_to_string(as) << " must broadcast along the leading dims of "
                             << shape_to_string(out_shape) << " only");
  for (const Tensor* t : {&scale, static_cast<const Tensor*>(&bias)})
    KILNRT_CHECK(!t->defined() || t->numel() == h, kInvalidArgument, where,
                 "scale / bias of shape " << shape_to_string(t->shape()) << " must have " << h << " elements");
  const std::vector<int64_t> ids = tensor_to_int64s(ids_t);
  // h = 0: the rows are empty (Y has no elements) but the ids are still checked, as Gather's would be.
  const int64_t rows = static_cast<int64_t>(ids.size()), period = h > 0 ? std::max<int64_t>(addend.numel() / h, 1) : 1;
  const float eps = node.attr_float("epsilon", 1e-5f);
  Tensor y = Tensor::empty(DType::kFloat32, out_shape);
  const float* tp = table.data<float>();
  const float* ap = addend.data<float>();
  float* yp = y.data<float>();
  std::vector<double> x(static_cast<size_t>(h));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t id = ids[size_t(r)];
    KILNRT_CHECK(id >= -vocab && id < vocab, kInvalidArgument, where,
                 "index " << id << " (row " << r << ") out of range [-" << vocab << ", " << vocab << ")");
    if (id < 0) id += vocab;
    const float* trow = tp + id * h;
    const float* arow = ap + (r % period) * h;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < h; ++i) mean += (x[size_t(i)] = double(trow[i]) + double(arow[i]));
    mean /= double(h);
    for (int64_t i = 0; i < h; ++i) var += (x[size_t(i)] - mean) * (x[size_t(i)] - mean);
    const double inv = 1.0 / std::sqrt(var / double(h) + eps);
    for (int64_t i = 0; i < h; ++i) {
      double v = (x[size_t(i)] - mean) * inv * scale.data<float>()[i];
      if (bias.defined()) v += bias.data<float>()[i];
      yp[r * h + i] = static_cast<float>(v);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain,
                            "EmbedLayerNorm",
                            1,
                            1000,
                            infer_embed_layernorm,
                            embed_layernorm_cpu,
                            {DType::kInt64, DType::kInt32},
                            "LayerNorm(table[ids] + addend) * scale + bias (made by fuse_embed_layernorm)"});

}  // namespace
}  // namespace kilnrt::ops::nn
