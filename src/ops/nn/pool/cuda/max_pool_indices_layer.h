// MaxPool with the Indices output (storage_order 0 / 1) or on int8 / uint8, 1-D to 3-D (max_pool_indices_layer.cc):
// pool_layer.cc's MaxPool registration hands these nodes over here.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

bool max_pool_needs_general(const ir::Node& n, const ir::Graph& g);
std::string max_pool_general_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_max_pool_general(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
