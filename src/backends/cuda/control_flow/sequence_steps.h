// ONNX sequence values in CUDA engines (docs/cuda-backend.md, "Sequences"). A sequence is a host list of device
// tensors (pointer, dtype, shape; the storage is in the segmented runner's value pool, a constant's upload or a graph
// input); the sequence ops are host steps that edit such lists, and every tensor they move is copied on the caller's
// stream by kilnrt's strided-copy kernel (SplitToSequence, ConcatFromSequence) or viewed in place (SequenceAt,
// SequenceConstruct / Insert: values are never written in place in a segmented run). Positions and split sizes are
// read on the host: a device value there is a sync point. A plan with a sequence step always runs segmented
// (runner_segments.cc), in float32 engines only. Sequences crossing If / Loop bodies and SequenceMap are refused at
// build (ops::check_cuda_sequences).
#pragma once
#include <functional>
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

struct DeviceSequenceItem {
  const void* data = nullptr;
  DType dtype = DType::kUndefined;
  Shape shape;
};

struct DeviceSequence {
  DType dtype = DType::kUndefined;  // element dtype (SequenceEmpty's attribute, or the elements')
  std::vector<DeviceSequenceItem> items;
};

// Sequence values of an If / Loop node (control_flow_layers.cc): per node input (its own, then the outer-scope values
// its bodies read) the sequence or null; per node output whether it is a sequence, and the sequence the layer made.
struct SequenceIo {
  std::vector<const DeviceSequence*> inputs;
  std::vector<uint8_t> output_is_sequence;
  std::vector<DeviceSequence> outputs;
};

// A copy of `seq` whose elements live in memory from `alloc` (device copies on `stream`): a body's sequence output
// outlives the body runner's next run.
DeviceSequence copy_sequence(const DeviceSequence& seq, const std::function<void*(size_t)>& alloc, StreamT stream,
                             const std::string& where);

// One sequence node (SequenceEmpty / Construct / Insert / At / Erase / Length, SplitToSequence,
// ConcatFromSequence, and Identity of a sequence: the plan makes one for it). enqueue() is never called: the
// segmented runner calls run().
class SequenceLayer : public CudaLayer {
 public:
  SequenceLayer(const ir::Node& node, int64_t opset) : node_(node), opset_(opset) {}
  std::string tactic() const override { return "host:sequence-list"; }
  // Positions (SequenceAt / Insert / Erase) and split sizes (SplitToSequence).
  std::vector<int> host_inputs() const override;
  void enqueue(LayerLaunch&) override {
    KILNRT_THROW(kInternal, node_.describe(), "a sequence step runs only through the segmented runner");
  }
  // launch.inputs: the node's tensor inputs (host value set for host inputs); seq_in[i]: the sequence of input i
  // (null for tensor inputs). Writes seq_out[o] for sequence outputs; launch.outputs[o] (data, dtype, shape) for
  // tensor outputs, with host_out[o] set too when the value is known on the host (SequenceLength: the caller
  // uploads it). `alloc` gives pool memory valid for this run. Throws kInvalidArgument naming the node.
  void run(LayerLaunch& launch, const std::vector<const DeviceSequence*>& seq_in, std::vector<DeviceSequence>& seq_out,
           std::vector<Tensor>& host_out, const std::function<void*(size_t)>& alloc) const;

 private:
  const ir::Node& node_;
  int64_t opset_;
};

}  // namespace kilnrt::backends::cuda
