// The CUDA layer of ReduceMax / ReduceMin of bool tensors (reduce_bool_layer.cc): the Reduce* registration asks
// reduce_is_bool first and hands such nodes over.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// True for ReduceMax / ReduceMin of a bool input.
bool reduce_is_bool(const ir::Node& n, const ir::Graph& g);
std::string reduce_bool_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_reduce_bool(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
