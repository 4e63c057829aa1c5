// Layers whose output shape depends on their input's values (NonZero, Compress): the plan makes each one a sync
// point (docs/cuda-backend.md, "Data-dependent shapes"). The runner gives the layer outputs of max_output_shapes()
// (upper bounds, allocated before the launch); enqueue() computes the exact size on the device, reads it on the host
// (one stream synchronisation) and writes the real shape into launch.outputs[o].shape, where the runner reads it.
#pragma once
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

class DataDependentLayer : public CudaLayer {
 public:
  // Upper bounds of the output shapes for these inputs (the storage the runner allocates).
  virtual std::vector<Shape> max_output_shapes(const std::vector<LayerTensor>& inputs) const = 0;
  // Output dtypes for these inputs.
  virtual std::vector<DType> output_dtypes(const std::vector<LayerTensor>& inputs) const = 0;
};

}  // namespace kilnrt::backends::cuda
