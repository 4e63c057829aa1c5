// Control-flow layers of the CUDA backend (If, Loop, Scan: control_flow_layers.cc). The driver runs on the host and
// the bodies run as nested CUDA plans on the caller's stream; the output shapes are known only once the node ran
// (the branch taken, the trip count), so the plan makes each such node a sync point and the segmented runner
// (runner_segments.cc) calls run() instead of enqueue(): the layer sizes its outputs itself and takes their memory
// from the runner's value pool through `alloc`. Per-context state (the body runners and their buffers) lives in a
// ControlFlowState the runner owns, one per step, created by the layer on its first run in that context.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

struct SequenceIo;  // sequence_steps.h

// Wires the outer-scope values a body reads (`free`, ir::outer_scope_reads order) into `body`, the body as a graph
// of its own: constants of `outer` are copied in, the others become extra inputs typed as in `outer`, and their
// index in `free` is appended to `outer_inputs`. Shared by If / Loop / Scan and SequenceMap.
void add_outer_scope_values(const ir::Graph& outer, const std::vector<std::string>& free, ir::Graph* body,
                            std::vector<size_t>* outer_inputs);

class ControlFlowState {
 public:
  virtual ~ControlFlowState() = default;
};

class ControlFlowLayer : public CudaLayer {
 public:
  // Device memory of `bytes` in the runner's value pool, valid until the next run of the plan.
  using Alloc = std::function<void*(size_t bytes)>;
  // launch.inputs: the node's inputs, then the outer-scope values its bodies read (ir::outer_scope_reads order).
  // launch.outputs[o].present: output o is used; the layer sets its dtype, shape and data (from `alloc`).
  // Returns the number of stream synchronisations made (host reads of a condition / trip count).
  virtual uint64_t run(LayerLaunch& launch, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state) = 0;
  // Like run(), for a node taking or returning sequences (sequence_steps.h): If and Loop override it.
  virtual uint64_t run_sequences(LayerLaunch& launch, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state,
                                 SequenceIo& seq) {
    (void)launch, (void)alloc, (void)state, (void)seq;
    KILNRT_THROW(kUnsupported, "control flow", "sequence values are not supported on CUDA yet for this node");
  }
  void enqueue(LayerLaunch&) override {
    KILNRT_THROW(kInternal, "control flow", "a control-flow layer runs only through the segmented runner");
  }
};

}  // namespace kilnrt::backends::cuda
