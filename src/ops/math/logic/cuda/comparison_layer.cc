// CUDA layer of the comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) and logic ops (And, Or, Xor):
// math/binary's broadcasting binary layer (bool output), kernels in math/binary/cuda/binary.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/math/binary/cuda/binary_layer.h"

namespace kilnrt::backends::cuda {

KILNRT_REGISTER_CUDA_LAYER({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"},
                           binary_supports, make_binary_layer);

}  // namespace kilnrt::backends::cuda
