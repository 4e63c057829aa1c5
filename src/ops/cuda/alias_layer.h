// The CUDA layer of the view ops (Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout without its mask): no
// kernel runs, output 0 aliases input 0's memory (CudaLayer::is_alias). One class for the ops of several units
// (shape/reshape_ops, shape/constant_ops, nn/flatten_dropout), each registering it from its own cuda/ folder.
#pragma once
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

class AliasLayer final : public CudaLayer {
 public:
  explicit AliasLayer(const ir::Node& n, int64_t opset) {
    if (n.op_type == "Reshape" || n.op_type == "Unsqueeze" || n.op_type == "Squeeze") host_ = {1};
  }
  std::string tactic() const override { return "alias"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return host_; }
  bool is_alias() const override { return true; }
  void enqueue(LayerLaunch&) override {}

 private:
  std::vector<int> host_;
};

}  // namespace kilnrt::backends::cuda
