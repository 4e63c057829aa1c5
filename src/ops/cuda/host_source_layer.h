// The CUDA layer of sources whose every input is read on the host: Range, ConstantOfShape (shape/constant_ops) and
// the scalar-input signal sources HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix (math/signal). With
// constant / shape-computed inputs the plan evaluates them on the host (never a layer); this layer only runs when an
// input is a device value, read at a sync point: the (small) result is then computed from those host values with the
// op's reference kernel and uploaded on the stream. Each unit registers it from its own cuda/ folder.
#pragma once
#include <memory>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

std::unique_ptr<CudaLayer> make_host_source_layer(const LayerCreateArgs& a);

}  // namespace kilnrt::backends::cuda
