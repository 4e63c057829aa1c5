// The CUDA layer of the Reduce* ops (reduce_layer.cc), also run for GlobalAveragePool / GlobalMaxPool (a mean /
// max over the spatial dims: ops/nn/pool/cuda/global_pool_layer.cc). Bool ReduceMax / ReduceMin are handed over to
// their own layer.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// "" when the node is supported (float32 / 16-bit / float64, or bool Max / Min), else why not.
std::string reduce_layer_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_reduce_layer(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
