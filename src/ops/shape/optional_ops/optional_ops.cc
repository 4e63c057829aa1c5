// ONNX optional ops on plain tensors (opset 15/18). kilnrt has no optional-typed values, so an "optional" here is
// a tensor input that is present or omitted:
//   OptionalHasElement(x?) -> bool scalar: whether x is given.
//   OptionalGetElement(x)  -> x (a tensor passes through; an omitted input is an error naming the node).
#include "core/check.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

void has_element_cpu(CpuContext& ctx) {
  const bool present = ctx.has_input(0) || ctx.has_sequence_input(0);
  Tensor y = Tensor::empty(DType::kBool, {});
  y.data<bool>()[0] = present;
  ctx.outputs[0] = y;
}

void infer_has_element(ShapeContext& ctx) { ctx.set_output(0, DType::kBool, {}); }

void get_element_cpu(CpuContext& ctx) {
  KILNRT_CHECK(ctx.has_input(0), kInvalidArgument, ctx.node.describe(),
               "OptionalGetElement of an empty optional (the input is omitted)");
  ctx.outputs[0] = ctx.input(0);
}

void infer_get_element(ShapeContext& ctx) {
  KILNRT_CHECK(ctx.has_input(0), kInvalidModel, ctx.node.describe(),
               "OptionalGetElement needs its input (an omitted input is an empty optional)");
  const ir::TensorType& x = ctx.input(0);
  KILNRT_CHECK(!x.is_sequence, kUnsupported, ctx.node.describe(),
               "OptionalGetElement of a sequence is not supported (tensors only)");
  if (x.has_shape)
    ctx.set_output(0, x.dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, x.dtype);
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"",
                            "OptionalHasElement",
                            15,
                            1000,
                            infer_has_element,
                            has_element_cpu,
                            {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kBool},
                            "whether the (tensor) input is given -> bool scalar"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "OptionalGetElement",
                            15,
                            1000,
                            infer_get_element,
                            get_element_cpu,
                            {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kBool},
                            "the (tensor) input itself; an omitted input is an error"});

}  // namespace kilnrt::ops
