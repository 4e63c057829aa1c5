// The CUDA backend's plan (per engine and device) and runner (per execution context).
//
// CudaPlan, built at engine load: classifies every node as a host shape computation (Shape/Size, or a node whose
// inputs are all constants or host values: evaluated on the host with the CPU kernels, never as GPU kernels with a
// sync) or a device layer (from the LayerRegistry; an op without a CUDA layer is an error naming the node — a CUDA
// engine never runs a tensor op on the CPU); uploads the constants device layers read, once.
//
// CudaRunner, one per execution context: for each tuple of input shapes (cached) it infers every value's concrete
// shape with the ops' shape functions, evaluates the host nodes, uploads host values that device layers read, and
// lays out the activation arena (greedy first-fit reuse by lifetime). The arena grows when shapes need more, never
// per call. enqueue() then launches the layers on the given stream with no host synchronisation.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_layer.h"
#include "backends/cuda/cuda_libs.h"
#include "ir/graph.h"
#include "kilnrt/cuda/memory.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

class CudaPlan {
 public:
  // Throws kUnsupported naming the first node without a CUDA layer. Uploads weights to `device`.
  CudaPlan(const ir::Graph& graph, int device);
  ~CudaPlan();
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  int device() const { return device_; }
  const ir::Graph& graph() const { return graph_; }
  // node name -> "cuda:<tactic>" or "host:shape" for every node.
  std::vector<std::pair<std::string, std::string>> tactics() const;

  // Checks, without a GPU, that every node of `graph` is placeable: host shape computation or a supported CUDA
  // layer. Throws kUnsupported naming the node otherwise. Returns node -> tactic guesses ("cuda:<op>").
  static void check_supported(const ir::Graph& graph);

 private:
  friend class CudaRunner;
  class Weights;
  struct Step {
    const ir::Node* node = nullptr;
    const ops::OpSchema* schema = nullptr;
    int64_t opset = 0;
    bool host = false;
    std::unique_ptr<CudaLayer> layer;  // device steps
    std::vector<int> inputs, outputs;  // slots, -1 omitted
  };
  const ir::Graph& graph_;
  int device_;
  std::unique_ptr<Weights> weights_;
  std::vector<Step> steps_;
  std::map<std::string, int> slot_of_;
  std::vector<std::string> slot_names_;
  std::vector<uint8_t> host_slot_;     // 1: value known on the host (constant or host node output)
  std::vector<uint8_t> upload_slot_;   // 1: host value (non-constant) a device layer or output reads on the device
  std::vector<int> input_slots_, output_slots_;
};

struct DeviceIo {
  const void* data = nullptr;
  void* mutable_data = nullptr;
};

class CudaRunner {
 public:
  explicit CudaRunner(const CudaPlan& plan);
  ~CudaRunner();

  // Infers shapes for these input shapes (cached per tuple), evaluates host nodes, uploads host values and makes
  // sure the arena is large enough (may allocate and synchronise `stream` when shapes are new: not per call).
  void prepare(const std::vector<Shape>& input_shapes, StreamT stream);
  // Shapes / dtypes of the graph outputs for the prepared shapes.
  std::vector<Shape> output_shapes() const;
  // Launches every layer on `stream`. inputs[i]: device pointer of graph input i (nullptr: it was staged with
  // stage_input). outputs[i]: destination device pointer of graph output i (nullptr: leave it in the arena and
  // read it with output_device_ptr).
  void enqueue(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, StreamT stream);
  // Arena pointer of graph input i for staging a host copy (valid after prepare).
  void* input_device_ptr(size_t i);
  const void* output_device_ptr(size_t i) const;
  LibraryHandles& handles() { return handles_; }

 private:
  struct ShapeState;
  const CudaPlan& plan_;
  LibraryHandles handles_;
  kilnrt::cuda::DeviceBuffer arena_, workspace_;
  std::map<std::vector<Shape>, std::unique_ptr<ShapeState>> states_;
  ShapeState* current_ = nullptr;
  std::vector<void*> ptrs_;
};

}  // namespace kilnrt::backends::cuda
