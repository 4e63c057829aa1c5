// Dropout with its mask output (opset 10+; dropout_mask_layer.cc): y = x and an all-true mask (inference, or
// training_mode with ratio 0, as the CPU reference; a true training_mode with another ratio is a clear error there
// and here). The Dropout registration (flatten_dropout_layer.cc) hands these nodes over here.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

bool dropout_has_mask(const ir::Node& n);
std::string dropout_mask_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_dropout_mask(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
