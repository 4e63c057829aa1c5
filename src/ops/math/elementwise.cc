#include "ops/math/elementwise.h"

namespace kilnrt::ops {

void infer_same_as_input(ShapeContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (in.has_shape)
      ctx.set_output(i, in.dtype, in.shape);
    else
      ctx.set_output_rank_unknown(i, in.dtype);
  }
}

void infer_broadcast(ShapeContext& ctx, DType dtype) {
  const ir::TensorType& first = ctx.input(0);
  DType out_dtype = dtype == DType::kUndefined ? first.dtype : dtype;
  ir::SymShape shape;
  bool started = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::TensorType& t = *ctx.inputs[i];
    if (!t.has_shape) {
      ctx.set_output_rank_unknown(0, out_dtype);
      return;
    }
    shape = started ? broadcast_sym_shapes(shape, t.shape, ctx.node) : t.shape;
    started = true;
  }
  ctx.set_output(0, out_dtype, shape);
}

void check_same_dtypes(const CpuContext& ctx, size_t first, size_t count) {
  DType expected = DType::kUndefined;
  for (size_t i = first; i < ctx.num_inputs() && i - first < count; ++i) {
    if (!ctx.has_input(i)) continue;
    DType t = ctx.inputs[i]->dtype();
    if (expected == DType::kUndefined) {
      expected = t;
      continue;
    }
    KILNRT_CHECK(t == expected, kInvalidModel, ctx.node.describe(),
                 ctx.node.op_type << ": input " << i << " ('" << ctx.node.inputs[i] << "') has dtype " << dtype_name(t)
                                  << ", expected " << dtype_name(expected));
  }
}

}  // namespace kilnrt::ops
