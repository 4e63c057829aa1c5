// The CPU backend's executor: runs an optimized graph node by node with the registry's CPU kernels. Intermediate
// tensors are released after their last use. Shape computations of dynamic exports run here on the host.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/engine.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cpu {

// Values a node's subgraph attributes (recursively) read but do not define: the outer-scope values of an If/Loop/Scan
// body. Sorted and unique. CpuPlan passes them to the node's kernel as extra inputs after the node's own inputs
// (CpuContext::inputs[node.inputs.size() + k] holds subgraph_free_values(node)[k]).
std::vector<std::string> subgraph_free_values(const ir::Node& node);

// Per-node timings a caller collects over CpuPlan::run calls (one per execution context). `layers` holds one entry
// per node in plan order (sized by the first profiled run); start offsets are measured from `origin`, the start of
// the first profiled run.
struct CpuProfile {
  std::vector<LayerTiming> layers;
  std::chrono::steady_clock::time_point origin;
  bool has_origin = false;
};

// A value a plan takes or returns: a tensor, or (sequence set) an ONNX sequence. Graph bodies (If/Loop) pass
// sequences in and out; the top-level graph's inputs and outputs are tensors.
struct PlanValue {
  Tensor tensor;
  std::shared_ptr<const ops::TensorSequence> sequence;
  bool is_sequence() const { return sequence != nullptr; }
};

class CpuPlan {
 public:
  // Resolves every node's kernel (throws kUnsupported naming the node when an op has no CPU kernel).
  explicit CpuPlan(const ir::Graph& graph);
  // For subgraphs (If/Loop/Scan bodies): `outer_values` are outer-scope names the body's nodes read; they become extra
  // inputs of the plan, so run()'s `inputs` must hold them too.
  CpuPlan(const ir::Graph& graph, const std::vector<std::string>& outer_values);
  // Runs the graph. `inputs` must hold every graph input (validated by the caller). Not thread-safe per call state:
  // all per-run state lives on the stack, so one plan may run on several threads at once.
  // `profile`: when non-null, each node's kernel is timed with steady_clock and added to it (null: no timing cost).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, CpuProfile* profile = nullptr) const;
  // Like run(), with sequence values allowed among the inputs and outputs (control-flow bodies).
  std::map<std::string, PlanValue> run_values(const std::map<std::string, PlanValue>& inputs,
                                              CpuProfile* profile = nullptr) const;

 private:
  struct Step {
    const ir::Node* node;
    const ops::OpSchema* schema;
    int64_t opset;
    std::vector<int> inputs;   // slot per input, -1 if omitted
    std::vector<int> outputs;  // slot per output, -1 if omitted
    std::vector<int> release;  // slots whose last use is this step
  };
  const ir::Graph& graph_;
  std::vector<Step> steps_;
  std::map<std::string, int> slot_of_;
  std::vector<std::pair<int, const Tensor*>> constant_slots_;
  std::vector<std::pair<std::string, int>> input_slots_, output_slots_;
  int num_slots_ = 0;
};

}  // namespace kilnrt::backends::cpu
