// The 3-D (volumetric, NCDHW) pooling layer that the MaxPool / AveragePool registration (pool_layer.cc) hands 5-D
// inputs over to: MaxPool without Indices and AveragePool (pool3d.cu); float32 (16-bit tensors run as float32
// islands).
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// True when the pooling node's input is 5-D (3 spatial dims).
bool pool_is_3d(const ir::Node& n, const ir::Graph& g);
// "" when a 3-D MaxPool (without Indices) / AveragePool is supported, else why not.
std::string pool3d_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_pool3d(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
