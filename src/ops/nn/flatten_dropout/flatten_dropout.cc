// Flatten (a view of the input as 2-D) and Dropout (inference: identity, optional all-true mask).
#include <cstring>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// ---- Flatten --------------------------------------------------------------------------------------------------

int64_t flatten_axis(const ir::Node& node, int64_t rank) {
  const int64_t axis = node.attr_int("axis", 1);
  KILNRT_CHECK(axis >= -rank && axis <= rank, kInvalidModel, node.describe(),
               "axis " << axis << " is out of range [" << -rank << ", " << rank << "] for an input of rank " << rank);
  return axis < 0 ? axis + rank : axis;
}

// Product of symbolic dims: known when all are known; a single unknown dim multiplied by 1s keeps its name.
ir::Dim sym_product(const ir::SymShape& s, size_t begin, size_t end) {
  int64_t known = 1;
  int unknown = 0;
  ir::Dim unknown_dim;
  for (size_t i = begin; i < end; ++i) {
    if (s[i].known()) {
      known *= s[i].value;
    } else {
      ++unknown;
      unknown_dim = s[i];
    }
  }
  if (unknown == 0) return ir::Dim(known);
  if (known == 0) return ir::Dim(0);
  if (unknown == 1 && known == 1) return unknown_dim;
  return ir::Dim();
}

void infer_flatten(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output(0, x.dtype, {ir::Dim(), ir::Dim()});
    return;
  }
  const size_t axis = static_cast<size_t>(flatten_axis(ctx.node, static_cast<int64_t>(x.shape.size())));
  ctx.set_output(0, x.dtype, {sym_product(x.shape, 0, axis), sym_product(x.shape, axis, x.shape.size())});
}

void flatten_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = flatten_axis(ctx.node, x.rank());
  ctx.outputs[0] = x.reshaped({dims_product(x.shape(), 0, axis), dims_product(x.shape(), axis, x.rank())});
}

// ---- Dropout --------------------------------------------------------------------------------------------------

void infer_dropout(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const bool has_mask = ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty();
  const DType mask_dtype = ctx.opset >= 10 ? DType::kBool : x.dtype;
  if (x.has_shape) {
    ctx.set_output(0, x.dtype, x.shape);
    if (has_mask) ctx.set_output(1, mask_dtype, x.shape);
  } else {
    ctx.set_output_rank_unknown(0, x.dtype);
    if (has_mask) ctx.set_output_rank_unknown(1, mask_dtype);
  }
}

void dropout_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.has_input(2)) {
    const Tensor& training = ctx.input(2);
    KILNRT_CHECK(training.numel() == 1 && training.dtype() == DType::kBool, kInvalidArgument, ctx.node.describe(),
                 "training_mode must be a bool scalar, got " << dtype_name(training.dtype()) << " "
                                                             << shape_to_string(training.shape()));
    if (training.data<uint8_t>()[0] != 0) {
      float ratio = 0.5f;
      if (ctx.has_input(1)) {
        Tensor r = to_float32(ctx.input(1), ctx.node, "ratio");
        KILNRT_CHECK(r.numel() == 1, kInvalidArgument, ctx.node.describe(), "ratio must be a scalar");
        ratio = r.data<float>()[0];
      }
      KILNRT_CHECK(ratio == 0.f, kUnsupported, ctx.node.describe(),
                   "training_mode=true with ratio " << ratio << " (random dropout) is not supported");
    }
  }
  ctx.outputs[0] = x;
  if (ctx.wants_output(1)) {
    KILNRT_CHECK(ctx.opset >= 10, kUnsupported, ctx.node.describe(),
                 "the mask output of Dropout before opset 10 is not supported");
    Tensor mask = Tensor::empty(DType::kBool, x.shape());
    if (mask.nbytes()) std::memset(mask.raw(), 1, mask.nbytes());
    ctx.outputs[1] = mask;
  }
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "Flatten",
                            1,
                            1000,
                            infer_flatten,
                            flatten_cpu,
                            {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
                             DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool},
                            "2-D view [prod(dims[:axis]), prod(dims[axis:])] of the input"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "Dropout",
                            7,
                            1000,
                            infer_dropout,
                            dropout_cpu,
                            {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64},
                            "inference: identity; optional all-true mask"});

}  // namespace
}  // namespace kilnrt::ops::nn
