// Float32 islands for float16 / bfloat16 tensors: a node whose CUDA layer takes float32 only, but whose
// tensors are float16 / bfloat16 in the model, runs in any engine as a float32 island: the plan converts its 16-bit
// inputs to float32 scratch (exact), runs the float32 layer, and rounds its float32 outputs back to the tensor's
// 16-bit type (round to nearest even) — what the CPU reference does (it computes these ops in float / double and
// rounds the result). The layer is created from a float32 view of the node (float32_island_view): the node's 16-bit
// value types retyped to float32, its 16-bit constants converted, its precision attribute float32.
// Not used where the layer runs 16-bit tensors natively (cuda_supports accepts the node as it is), for aliases, for
// 16-bit values the layer reads on the host, for nodes with subgraphs or an output dtype / 16-bit tensor attribute,
// nor in plans with sync points (the segmented runner, runner_segments.cc, has no island conversions).
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ir/graph.h"

namespace kilnrt::backends::cuda {

// True for the 16-bit float types an island converts.
inline bool is_16bit_float(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// The float32 view of `node` when its CUDA layer accepts it there (and `why`, the reason it refuses the node as it
// is, is cleared); nullptr when the node has no 16-bit float value or the view does not help (`why` unchanged). The
// view's only node is a copy of `node` (pass view->nodes[0] to the layer factory: the layer may keep a reference).
std::shared_ptr<ir::Graph> float32_island_view(const ir::Node& node, const ir::Graph& graph, std::string& why);

// cuda_supports(), accepting what a float32 island runs ("" when placeable either way).
std::string cuda_supports_or_island(const ir::Node& node, const ir::Graph& graph);

// After the island's layer is created: "" when it can run as an island, else why not (the caller reports it).
std::string island_layer_problem(const CudaLayer& layer, const ir::Node& node, const ir::Graph& graph);

// Whether an island step converts a value with model dtype `dtype` stored as `storage`: the 16-bit engines' float32
// values (stored in 16 bits), and for islands created from a float32 view (`retyped`) every 16-bit float value.
inline bool island_converts(DType dtype, DType storage, bool retyped) {
  return dtype != storage || (retyped && is_16bit_float(storage));
}

}  // namespace kilnrt::backends::cuda
