// CUDA layer of GlobalAveragePool / GlobalMaxPool: a mean / max over the spatial dims, run by the Reduce* layer
// (ops/reduce/reductions/cuda/reduce_layer.h).
#include "ops/cuda/cuda_layer.h"
#include "ops/reduce/reductions/cuda/reduce_layer.h"

namespace kilnrt::backends::cuda {

KILNRT_REGISTER_CUDA_LAYER({"GlobalAveragePool", "GlobalMaxPool"}, reduce_layer_supports, make_reduce_layer);

}  // namespace kilnrt::backends::cuda
