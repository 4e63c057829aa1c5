// CUDA layer registrations of the float32 math unary ops (Tan ... Atanh, Shrink) and IsNaN / IsInf: the layer is
// math_unary_layer.h.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/math/unary/cuda/math_unary_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

KILNRT_REGISTER_CUDA_LAYER(
    {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Shrink"},
    [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); }, factory<XUnaryLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"IsNaN", "IsInf"},  // 16-bit / float64: kernels::nan_inf
    [](const ir::Node& n, const ir::Graph& g) {
      return dtype_in(n, g, 0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64});
    },
    factory<XUnaryLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
