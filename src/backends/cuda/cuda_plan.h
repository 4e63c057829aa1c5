// The CUDA backend's plan (per engine and device) and runner (per execution context).
//
// CudaPlan, built at engine load: classifies every node as a host shape computation (Shape/Size, or a node whose
// inputs are all constants or host values: evaluated on the host with the CPU kernels, never as GPU kernels with a
// sync) or a device layer (from the LayerRegistry; an op without a CUDA layer is an error naming the node — a CUDA
// engine never runs a tensor op on the CPU); uploads the constants device layers read, once. Sync points (a layer
// whose output shape depends on data, or a device value a layer reads on the host) make the runner execute the plan
// segment by segment instead (runner_segments.cc; docs/cuda-backend.md, "Data-dependent shapes").
//
// CudaRunner, one per execution context: for each tuple of input shapes (cached) it infers every value's concrete
// shape with the ops' shape functions, evaluates the host nodes, uploads host values that device layers read, and
// lays out the activation arena (greedy first-fit reuse by lifetime). The arena grows when shapes need more, never
// per call. enqueue() then launches the layers on the given stream with no host synchronisation.
//
// CUDA graphs (on by default; KILNRT_CUDA_GRAPHS=0 or set_graphs_enabled(false) turn them off): the first call with
// a shape tuple runs the layers directly (warm-up: cuDNN algorithm choice, library lazy init); the second captures
// the layer sequence once on a private stream (CudaGraph, thread-local capture mode) with the inputs and outputs in
// the arena; from then on every call copies the bound inputs into the arena (D2D on the caller's stream), replays
// the graph on the caller's stream and copies the outputs out — new bound addresses never cause a re-capture.
// Captured graphs are kept per shape tuple, at most kMaxGraphs (least recently used evicted); growing the arena
// drops them all (they address the old arena). When the caller's stream is itself capturing (torch.cuda.graph), the
// layers are enqueued directly so that the caller's graph records them. A capture that fails (a library refusing
// capture, or a context-wide synchronisation by someone else) falls back to direct launches with a warning and is
// retried on later calls, at most kMaxCaptureAttempts times per shape tuple.
//
// Capture-safe preparation: everything that allocates (workspace, arena, per-shape uploads, library handles) runs
// with the calling thread in relaxed capture mode (cuda/capture_safety.h), with cuMemAlloc, and per-shape host
// values are uploaded on a private non-blocking stream that is synchronised alone — never an operation on the
// caller's stream besides the layers' launches. So a fresh context or a new shape tuple inside a caller's capture
// (GLOBAL mode included) works: the new tuple is warmed up once on the private stream first (cuDNN / cuBLASLt lazy
// initialisation, module loading), then enqueued into the caller's capture. Memory that a caller's capture may
// address (an arena replaced while capturing) is kept until the runner is destroyed. Not thread-safe: the
// execution context serialises calls.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "cuda/cuda_libs.h"
#include "engine/device_weights.h"
#include "ir/graph.h"
#include "kilnrt/cuda/graph.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/engine.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {

class CudaPlan {
 public:
  // Throws kUnsupported naming the first node without a CUDA layer. Uploads weights to `device`: `image` (an
  // engine's stored device weights, may be null) in one allocation and one copy, the rest one by one; `record`
  // keeps every upload's host bytes for device_weight_image() (the builder). plan_weights.h.
  CudaPlan(const ir::Graph& graph, int device, const engine::DeviceWeightImage* image = nullptr, bool record = false);
  ~CudaPlan();
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  int device() const { return device_; }
  const ir::Graph& graph() const { return graph_; }
  // node name -> "cuda:<tactic>" or "host:shape" for every node.
  std::vector<std::pair<std::string, std::string>> tactics() const;
  // node name -> effective precision: "host" (shape computation), "fp16" / "bf16" (16-bit engine layer), "fp32"
  // (float32 engine layer, or a 16-bit engine's float32 island), "tf32".
  std::vector<std::pair<std::string, std::string>> precisions() const;

  // Checks, without a GPU, that every node of `graph` is placeable: host shape computation or a supported CUDA
  // layer. Throws kUnsupported naming the node otherwise. Returns node -> tactic guesses ("cuda:<op>").
  static void check_supported(const ir::Graph& graph);
  // Recording plans (the builder): every uploaded buffer as an image, with device_only = the big constants that
  // nothing reads on the host (stored without host data in the engine file). Call once.
  engine::DeviceWeightImage device_weight_image();

 private:
  friend class CudaRunner;
  // 16-bit engines: NHWC storage for conv chains, reformats at boundaries (layout_plan.h); unless `forced`
  // (KILNRT_CUDA_NHWC=1) only when predict_nhwc_win says so.
  void plan_layouts(const ir::Graph& graph, bool forced);
  class Weights;
  struct Step {
    const ir::Node* node = nullptr;
    const ops::OpSchema* schema = nullptr;
    int64_t opset = 0;
    bool host = false;
    std::unique_ptr<CudaLayer> layer;  // device steps
    std::vector<int> inputs, outputs;  // slots, -1 omitted
    bool island = false;               // 16-bit engine, layer runs in float32: converted in / out around it
    // Float32 island of 16-bit model tensors (float32_island.h), any engine: the float32 view the layer was made from.
    std::shared_ptr<ir::Graph> island_view;
    std::vector<int> host_in;      // inputs the layer reads on the host (never converted)
    bool nhwc = false;             // runs with NHWC storage (layout_plan.h)
    std::vector<int8_t> reformat;  // per input: +1 reformat to NHWC, -1 to NCHW, 0 none (empty: none)
    bool view = false;             // a Transpose between NCHW and NHWC that is a view of its input
    bool nhwc_shapes = false;      // NHWC elementwise step: the layer sees permuted logical shapes
    bool nhwc_native = false;      // NHWC-capable layer running NHWC (layout-free X / Z / Y flagged NHWC too)
    // Sync points (runner_segments.cc): inputs the layer reads on the host that are device values (copied to the
    // host after a stream sync), and layers whose output shapes depend on data (DataDependentLayer).
    std::vector<int> sync_in;
    bool data_dependent = false;
    bool sequences = false;  // If / Loop passing sequences or whose bodies use them (sequence_steps.h)
  };
  // 16-bit activation dtype of --fp16 / --bf16 engines (kUndefined: float32 activations).
  DType act16_ = DType::kUndefined;
  const ir::Graph& graph_;
  int device_;
  std::unique_ptr<Weights> weights_;
  std::vector<Step> steps_;
  std::map<std::string, int> slot_of_;
  std::vector<std::string> slot_names_;
  std::vector<uint8_t> host_slot_;    // 1: value known on the host (constant or host node output)
  std::vector<uint8_t> upload_slot_;  // 1: host value (non-constant) a device layer or output reads on the device
  std::vector<int> input_slots_, output_slots_;
  std::vector<const void*> const_ptr_;  // per slot: device copy of a constant (null: not uploaded / not constant)
  std::vector<uint8_t> nhwc_slot_;      // per slot: stored NHWC (empty: everything NCHW); layout_plan.h
  int sync_points_ = 0;                 // data-dependent layers + device values read on the host (0: static plan)

 public:
  // Number of sync points: > 0 means the engine runs segment by segment, synchronising its stream at each
  // (docs/cuda-backend.md, "Data-dependent shapes"); CUDA graphs and caller captures are then not available.
  int sync_points() const { return sync_points_; }
};

class LayerProfiler;    // runner_profiling.h
struct DeviceSequence;  // sequence_steps.h

struct DeviceIo {
  const void* data = nullptr;
  void* mutable_data = nullptr;
};

class CudaRunner {
 public:
  // How the last enqueue() ran.
  enum class Mode { kNone, kDirect, kGraphCapture, kGraphReplay, kCallerCapture };
  static const char* mode_name(Mode m);
  struct Stats {
    uint64_t direct = 0, captures = 0, replays = 0, caller_captured = 0, capture_failures = 0, evictions = 0;
    uint64_t direct_io_captures = 0, direct_io_replays = 0;  // graphs on the caller's I/O pointers (no copies)
  };
  static constexpr size_t kMaxGraphs = 8;
  static constexpr int kMaxCaptureAttempts = 3;

  explicit CudaRunner(const CudaPlan& plan);
  ~CudaRunner();

  // 16-bit I/O (BuildOptions::io16): the dtypes the caller binds graph inputs / outputs in. A float32 graph value
  // bound in the engine's 16-bit storage type is read / written in place (no float32 staging, no conversion kernel);
  // any other entry keeps the model's dtype. Set before the first prepare() (or arena_bytes_for()).
  void set_io_dtypes(const std::vector<DType>& inputs, const std::vector<DType>& outputs);
  void set_graphs_enabled(bool on) { graphs_enabled_ = on; }
  bool graphs_enabled() const { return graphs_enabled_; }
  Mode last_mode() const { return last_mode_; }
  const Stats& stats() const { return stats_; }
  // True for plans with sync points: output_shapes() tells the shapes of the last enqueue() (they are known once it
  // returns; before the first run: the shapes known without running, 0-sized where data decides).
  bool data_dependent() const { return plan_.sync_points_ > 0; }
  // Stream synchronisations made by sync points so far (segmented runs only).
  uint64_t sync_count() const;
  size_t cached_graphs() const { return graph_lru_.size(); }

  // Infers shapes for these input shapes (cached per tuple), evaluates host nodes, uploads host values and makes
  // sure the arena is large enough (may allocate when shapes are new: not per call). `stream` is where the work
  // will be enqueued: when it is not capturing and the arena must grow, the previous work is waited for.
  void prepare(const std::vector<Shape>& input_shapes, StreamT stream);
  // Shapes / dtypes of the graph outputs for the prepared shapes.
  std::vector<Shape> output_shapes() const;
  // Activation arena bytes these input shapes need: host only, no CUDA call (memory_plan.h's layout, the one
  // prepare() uses). A runner allocates nothing before prepare(), so the builder can make one to ask this.
  size_t arena_bytes_for(const std::vector<Shape>& input_shapes) const;
  // Allocates an arena of at least `bytes` now (context creation: the profiles' max), so that shapes within the
  // profiles never grow it later. Relaxed capture mode. No-op with a caller-provided arena.
  void reserve_arena(size_t bytes);
  // The caller's memory becomes the arena from now on (never allocated, grown or freed by the runner; nullptr / 0:
  // none yet). prepare() then never allocates an arena: check prepared_arena_bytes() <= arena_capacity() before
  // enqueue(). Waits for the runner's earlier work when the memory changes (the graphs that address it are dropped).
  void set_external_arena(void* data, size_t bytes);
  bool external_arena() const { return external_arena_; }
  size_t arena_capacity() const { return arena_size(); }
  size_t prepared_arena_bytes() const;
  // Launches every layer on `stream`. inputs[i]: device pointer of graph input i (nullptr: it was staged with
  // stage_input). outputs[i]: destination device pointer of graph output i (nullptr: leave it in the arena and
  // read it with output_device_ptr).
  void enqueue(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, StreamT stream);
  // Arena pointer of graph input i for staging a host copy (valid after prepare).
  void* input_device_ptr(size_t i);
  const void* output_device_ptr(size_t i) const;
  LibraryHandles& handles() { return handles_; }
  // Per-layer timing (runner_profiling.cc): while on, timing events surround each layer and enqueue() launches the
  // layers directly (no CUDA graphs). Turning it on clears earlier timings.
  void set_profiling(bool on);
  bool profiling() const { return profiler_ != nullptr; }
  // Timings so far, one entry per plan step (calls == 0: never timed); waits for the recorded events only.
  std::vector<LayerTiming> layer_timings();
  // Device memory the runner holds: arena(s) and workspace.
  size_t device_memory_bytes() const;
  // Runs over `bytes` (at least kWorkspaceBytes) of a caller's device workspace instead of allocating its own: the
  // bodies of If / Loop / Scan use their parent context's, as they run one at a time on its stream
  // (control_flow/control_flow_layers.cc). Set before the first prepare().
  void use_external_workspace(void* data, size_t bytes);
  // Sequence values (sequence_steps.h) of a plan whose graph takes or returns them (If / Loop bodies, segmented):
  // per graph input its sequence (null: a tensor), set before enqueue() and outliving it; after enqueue(), graph
  // output i's sequence (null: a tensor), valid until the next enqueue().
  void set_sequence_inputs(std::vector<const DeviceSequence*> seqs) { seq_inputs_ = std::move(seqs); }
  const DeviceSequence* sequence_output(size_t i) const;

 private:
  struct ShapeState;
  // Host part of prepare(): shapes, host values and arena layout of a new shape tuple.
  std::unique_ptr<ShapeState> layout_for(const std::vector<Shape>& input_shapes) const;
  // Device part of prepare(): uploads host values, grows an own arena when needed, caches the state.
  void finish_prepare(std::unique_ptr<ShapeState> st, const std::vector<Shape>& input_shapes, StreamT stream,
                      bool capturing);
  char* arena_data() const { return static_cast<char*>(external_arena_ ? external_data_ : arena_.data()); }
  size_t arena_size() const { return external_arena_ ? external_bytes_ : arena_.size(); }
  void* workspace_data() const { return external_workspace_ ? external_workspace_ : workspace_.data(); }
  size_t workspace_size() const { return external_workspace_ ? external_workspace_bytes_ : workspace_.size(); }
  // Resolves every slot's device pointer for `st` (inputs[i] non-null: the caller's memory, else the arena).
  // outputs[i] non-null: graph output i is written there directly when its storage is its own (not an alias, input or
  // upload), so that no copy out of the arena is needed (the direct-I/O graph).
  void resolve_pointers(const ShapeState& st, const std::vector<const void*>& inputs,
                        const std::vector<void*>& outputs = {});
  // Graph I/O buffers in the model's dtype: the float32 staging buffer of a converted float input / output in
  // 16-bit engines, else the value's own storage.
  void* io_in(size_t i) const;
  void* io_out(size_t i) const;
  // Bytes of io_in(i) (output false) / io_out(i) (output true) for `st`: float32 for a staging buffer, else the
  // value's storage dtype (16 bits for the I/O of a 16-bit-I/O engine).
  size_t io_bytes(const ShapeState& st, size_t i, bool output) const;
  std::vector<bool> in16_, out16_;  // set_io_dtypes: graph input / output i bound in its 16-bit storage
  // Launches the layers (ptrs_ resolved) on `stream`; copies graph outputs to outputs[i] where non-null.
  void launch_layers(const ShapeState& st, const std::vector<void*>& outputs, StreamT stream);
  void enqueue_with_graph(ShapeState& st, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                          StreamT stream);
  void drop_graphs() noexcept;
  // Graph replay on the caller's I/O pointers when they repeat (ShapeState::direct_graph); false: not applicable.
  bool launch_direct_io_graph(ShapeState& st, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                              StreamT stream);
  // Whether st.direct_graph exists and was captured on exactly these I/O pointers.
  static bool direct_graph_matches(const ShapeState& st, const std::vector<const void*>& inputs,
                                   const std::vector<void*>& outputs);
  void launch_direct(ShapeState& st, StreamT stream);  // replays st.direct_graph (counted as a replay)
  void touch_graph(ShapeState& st);                    // st becomes the most recently used graph owner
  // Workspace and library handles the layers need (relaxed capture mode: may run inside a caller's capture).
  void ensure_resources();
  // Replaces the arena by one of `bytes`: waits for earlier work first, or, when `capturing`, keeps the old arena
  // and graphs alive until destruction (a caller's capture may address them; nothing can be waited for).
  void grow_arena(size_t bytes, StreamT stream, bool capturing);
  // First run of a tuple whose first call lands inside a caller's capture: runs the layers once on the private
  // stream (arena inputs zeroed) and waits for it, so that libraries initialise outside the capture.
  void warm_up_privately(ShapeState& st);
  StreamT aux_stream();
  // Per-step shape helpers shared by layout_for and the segmented run (runner_layout.cc).
  static void eval_host_step(const CudaPlan::Step& step, std::vector<Shape>& shapes, std::vector<DType>& dtypes,
                             std::vector<Tensor>& host_values);
  static void infer_device_step(const CudaPlan::Step& step, std::vector<Shape>& shapes, std::vector<DType>& dtypes,
                                const std::vector<Tensor>& host_values);
  // Plans with sync points (runner_segments.cc): prepare stages the inputs only; enqueue runs step by step, sizing
  // every value once its inputs are known, with one stream sync per sync point reached.
  struct Segmented;
  void prepare_segmented(const std::vector<Shape>& input_shapes, StreamT stream);
  void enqueue_segmented(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, StreamT stream);
  std::vector<Shape> segmented_output_shapes() const;
  size_t segmented_memory_bytes() const;  // pool chunks and staged inputs (0 without sync points)
  void* segmented_input_ptr(size_t i);
  std::unique_ptr<Segmented> seg_;
  std::vector<const DeviceSequence*> seq_inputs_;  // set_sequence_inputs
  const CudaPlan& plan_;
  LibraryHandles handles_;
  kilnrt::cuda::DeviceBuffer arena_, workspace_;
  bool arena_used_ = false;      // work was enqueued on arena_ since it was allocated
  bool external_arena_ = false;  // the arena is the caller's memory (set_external_arena)
  void* external_data_ = nullptr;
  size_t external_bytes_ = 0;
  void* external_workspace_ = nullptr;  // use_external_workspace
  size_t external_workspace_bytes_ = 0;
  bool arena_in_caller_capture_ = false;              // a caller's captured graph addresses arena_: it is never freed
  kilnrt::cuda::Stream aux_;                          // private non-blocking stream: uploads and private warm-ups
  kilnrt::cuda::Event done_;                          // recorded after each non-captured enqueue: the arena's last use
  std::vector<kilnrt::cuda::DeviceBuffer> retained_;  // arenas a caller's capture may address
  std::vector<std::unique_ptr<kilnrt::cuda::CudaGraph>> retained_graphs_;  // graphs possibly still in flight
  std::map<std::vector<Shape>, std::unique_ptr<ShapeState>> states_;
  ShapeState* current_ = nullptr;
  std::vector<void*> ptrs_;
  char* launch_base_ = nullptr;      // arena base of the pointers in ptrs_
  std::vector<void*> in32_, out32_;  // per graph input / output: float32 staging (16-bit engines), else null
  bool graphs_enabled_ = true;
  Mode last_mode_ = Mode::kNone;
  Stats stats_;
  std::vector<ShapeState*> graph_lru_;       // states holding a graph, most recently used last
  std::unique_ptr<LayerProfiler> profiler_;  // non-null while profiling
};

}  // namespace kilnrt::backends::cuda
