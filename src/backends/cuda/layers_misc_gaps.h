// Entry points of layers_misc_gaps.cc for the cases the ops' main CUDA layers do not cover: the
// registrations of BatchNormalization (layers_nn.cc), MaxPool (layers_nn.cc) and Dropout (flatten_dropout_layer.cc) hand
// these nodes over here, so that each op keeps one registry entry and its existing cases run unchanged.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// BatchNormalization whose scale / B / mean / var are not all float32 constants, or in training mode (batch
// statistics and the running mean / var outputs): parameters read on the device, nothing folded at load.
bool batch_norm_needs_general(const ir::Node& n, const ir::Graph& g);
std::string batch_norm_general_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_batch_norm_general(const LayerCreateArgs& a);

// MaxPool with the Indices output (storage_order 0 / 1) or on int8 / uint8, 1-D to 3-D.
bool max_pool_needs_general(const ir::Node& n, const ir::Graph& g);
std::string max_pool_general_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_max_pool_general(const LayerCreateArgs& a);

// Dropout with its mask output (opset 10+): y = x and an all-true mask (inference, or training_mode with ratio 0,
// as the CPU reference; a true training_mode with another ratio is a clear error there and here).
bool dropout_has_mask(const ir::Node& n);
std::string dropout_mask_supports(const ir::Node& n, const ir::Graph& g);
std::unique_ptr<CudaLayer> make_dropout_mask(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
