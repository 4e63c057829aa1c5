// CUDA layer registration of Not (bool): the math unary layer (ops/math/unary/cuda/math_unary_layer.h) runs it.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/unary/cuda/math_unary_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

KILNRT_REGISTER_CUDA_LAYER(
    {"Not"}, [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kBool}); },
    factory<XUnaryLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
