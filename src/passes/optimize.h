// The pass pipeline the builder runs: shape inference, constant folding (to a fixed point), dead-code elimination.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kilnrt::passes {
struct OptimizeReport {
  size_t nodes_before = 0, nodes_after = 0, folded = 0, removed = 0;
  std::string summary() const;
};
struct OptimizeOptions {
  // fuse_attention. The builder turns it off for float32 CUDA engines: there the fused kernel's float32
  // path was measured slower than cuBLAS MatMul + Softmax (H100, vit_b_16, 2026-11-22;
  // bench/results/README.md).
  bool fuse_attention = true;
  // fuse_pointwise: chains of pointwise ops -> com.kilnrt:FusedPointwise (one NVRTC kernel per group).
  // CUDA engines only (the builder sets it); the CPU runs the unfused ops as fast.
  bool fuse_pointwise = false;
};
OptimizeReport optimize_graph(ir::Graph& graph, const OptimizeOptions& options = {});
}  // namespace kilnrt::passes
