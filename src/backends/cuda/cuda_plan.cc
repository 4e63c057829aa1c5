#include "backends/cuda/cuda_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "backends/cuda/control_flow/control_flow_layer.h"
#include "ops/cuda/data_dependent_layer.h"
#include "backends/cuda/float32_island.h"
#include "backends/cuda/plan_internal.h"
#include "backends/cuda/plan_weights.h"
#include "backends/cuda/runner_profiling.h"
#include "backends/cuda/control_flow/sequence_steps.h"
#include "backends/cuda/layout_plan.h"
#include "backends/cuda/layout_timing.h"
#include "backends/cuda/memory_plan.h"
#include "core/env_switch.h"
#include "core/logging.h"
#include "cuda/capture_safety.h"
#include "cuda/context_guard.h"
#include "ops/sequence/sequence_support.h"

namespace kilnrt::backends::cuda {
using namespace plan_detail;  // plan_internal.h

// ---- plan ------------------------------------------------------------------------------------------------------

void CudaPlan::check_supported(const ir::Graph& graph) {
  std::unordered_set<std::string> host(graph.inputs.size());
  for (const auto& [name, t] : graph.constants) host.insert(name);
  for (const ir::Node& node : graph.nodes) {
    bool all_host = true;
    for (const std::string& in : node.inputs) all_host &= in.empty() || host.count(in) != 0;
    for (const std::string& in : ir::outer_scope_reads(node)) all_host &= host.count(in) != 0;  // If/Loop/Scan
    // Sequence ops are never host steps: their sequences live in the segmented runner (sequence_steps.h).
    if ((always_host(node.op_type) || all_host) && !ops::is_sequence_op(node.op_type)) {
      for (const std::string& out : node.outputs) host.insert(out);
      continue;
    }
    const std::string why = cuda_supports_or_island(node, graph);  // float32_island.h
    KILNRT_CHECK(why.empty(), kUnsupported, node.describe(), "the CUDA backend cannot run this node: " << why);
  }
}

CudaPlan::CudaPlan(const ir::Graph& graph, int device, const engine::DeviceWeightImage* image, bool record)
    : graph_(graph), device_(device), weights_(std::make_unique<Weights>(device, image, record)) {
  auto slot = [&](const std::string& name) {
    auto it = slot_of_.find(name);
    if (it != slot_of_.end()) return it->second;
    const int s = static_cast<int>(slot_names_.size());
    slot_of_[name] = s;
    slot_names_.push_back(name);
    host_slot_.push_back(graph.is_constant(name) ? 1 : 0);
    upload_slot_.push_back(0);
    return s;
  };
  for (const std::string& in : graph.inputs) input_slots_.push_back(slot(in));
  const auto& registry = ops::OpRegistry::instance();
  std::unordered_set<std::string> device_constants;
  for (const ir::Node& node : graph.nodes) {
    Step s;
    s.node = &node;
    s.opset = graph.opset(node.domain);
    s.schema = &registry.get(node, s.opset);
    bool all_host = true;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        s.inputs.push_back(-1);
        continue;
      }
      KILNRT_CHECK(slot_of_.count(in) || graph.is_constant(in), kInvalidModel, node.describe(),
                   "input '" << in << "' is never produced");
      const int is = slot(in);
      s.inputs.push_back(is);
      all_host &= host_slot_[is] != 0;
    }
    // If / Loop / Scan: the outer-scope values their bodies read are extra inputs after the node's own (as on the
    // CPU backend: backends::cpu::subgraph_free_values).
    for (const std::string& in : ir::outer_scope_reads(node)) {
      KILNRT_CHECK(slot_of_.count(in) || graph.is_constant(in), kInvalidModel, node.describe(),
                   "outer-scope value '" << in << "' is never produced");
      const int is = slot(in);
      s.inputs.push_back(is);
      all_host &= host_slot_[is] != 0;
    }
    s.host = (always_host(node.op_type) || all_host) && !ops::is_sequence_op(node.op_type);  // sequence_steps.h
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        s.outputs.push_back(-1);
        continue;
      }
      const int os = slot(out);
      s.outputs.push_back(os);
      if (s.host) host_slot_[os] = 1;
    }
    if (s.host) {
      KILNRT_CHECK(always_host(node.op_type) || static_cast<bool>(s.schema->cpu), kUnsupported, node.describe(),
                   "shape computation without a CPU kernel");
    } else {
      std::string why = cuda_supports(node, graph);
      if (!why.empty()) s.island_view = float32_island_view(node, graph, why);  // 16-bit tensors, float32 layer
      KILNRT_CHECK(why.empty(), kUnsupported, node.describe(), "the CUDA backend cannot run this node: " << why);
      const ir::Graph& lg = s.island_view ? *s.island_view : graph;
      const LayerEntry* entry = find_layer(node, lg);
      try {
        s.layer = entry->create(LayerCreateArgs{s.island_view ? lg.nodes[0] : node, lg, s.opset, *weights_, device});
      } catch (const Error& e) {
        if (e.where().find(node.name) != std::string::npos) throw;
        throw e.with_context(node.describe());
      }
      // Identity of a sequence: a sequence step passing the list on (sequence_steps.h).
      if (node.op_type == "Identity" && !node.inputs.empty() && graph.type_of(node.inputs[0]) &&
          graph.type_of(node.inputs[0])->is_sequence)
        s.layer = std::make_unique<SequenceLayer>(node, s.opset);
      if (s.island_view) {
        const std::string problem = island_layer_problem(*s.layer, node, graph);
        KILNRT_CHECK(problem.empty(), kUnsupported, node.describe(),
                     "the CUDA backend cannot run this node: " << cuda_supports(node, graph) << " (" << problem << ")");
        s.island = true;
        s.host_in = s.layer->host_inputs();
      }
      const std::vector<int> host_in = s.layer->host_inputs();
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        if (s.inputs[i] < 0) continue;
        const bool wants_host = std::find(host_in.begin(), host_in.end(), static_cast<int>(i)) != host_in.end();
        const int is = s.inputs[i];
        if (wants_host) {
          // A device value the layer reads on the host: a sync point (copied to the host mid-run).
          if (!host_slot_[is]) s.sync_in.push_back(static_cast<int>(i));
        } else if (graph.is_constant(slot_names_[is])) {
          device_constants.insert(slot_names_[is]);
        } else if (host_slot_[is]) {
          upload_slot_[is] = 1;
        }
      }
      s.data_dependent = dynamic_cast<const DataDependentLayer*>(s.layer.get()) != nullptr;
      sync_points_ += static_cast<int>(s.sync_in.size()) + (s.data_dependent ? 1 : 0);
      // If / Loop / Scan: output shapes known once the node ran (control_flow/control_flow_layers.cc).
      if (dynamic_cast<const ControlFlowLayer*>(s.layer.get())) ++sync_points_;
      if (dynamic_cast<const ControlFlowLayer*>(s.layer.get())) s.sequences = ops::node_uses_sequences(node, graph);
      // Sequence steps: host lists of device tensors, only in segmented runs (sequence_steps.h).
      if (dynamic_cast<const SequenceLayer*>(s.layer.get())) ++sync_points_;
    }
    steps_.push_back(std::move(s));
  }
  for (const std::string& out : graph.outputs) {
    KILNRT_CHECK(slot_of_.count(out), kInvalidModel, out, "graph output '" << out << "' is never produced");
    const int os = slot_of_.at(out);
    output_slots_.push_back(os);
    if (graph.is_constant(out))
      device_constants.insert(out);
    else if (host_slot_[os])
      upload_slot_[os] = 1;
  }
  // Sequence graph inputs / outputs (If / Loop bodies): segmented runs only (sequence_steps.h).
  for (const std::vector<std::string>* io : {&graph.inputs, &graph.outputs})
    for (const std::string& v : *io)
      if (graph.type_of(v) && graph.type_of(v)->is_sequence) ++sync_points_;
  for (const Step& st : steps_)
    KILNRT_CHECK(!st.island_view || !st.data_dependent, kUnsupported, st.node->describe(),
                 "the CUDA backend cannot run this node: "
                     << cuda_supports(*st.node, graph)
                     << " (a float32 island of its 16-bit tensors cannot have a data-dependent output shape)");
  // --fp16 / --bf16 engines: float activations are stored in 16 bits between layers (the plan's precision).
  for (const Step& st : steps_) {
    if (st.host) continue;
    const Precision p = node_precision(*st.node);
    if (p == Precision::kFp16) act16_ = DType::kFloat16;
    if (p == Precision::kBf16) act16_ = DType::kBFloat16;
  }
  for (const Step& st : steps_)  // sequence_steps.h
    KILNRT_CHECK(act16_ == DType::kUndefined || st.host || !dynamic_cast<const SequenceLayer*>(st.layer.get()),
                 kUnsupported, st.node->describe(),
                 "sequence values run in float32 CUDA engines only (not --fp16 / --bf16)");
  if (act16_ != DType::kUndefined) {
    for (Step& st : steps_) {
      if (st.host) continue;
      // A layer without 16-bit kernels, or one pinned to float32 (kilnrt_precision "fp32"), runs as a float32 island.
      // Never an alias (a view of its input's storage, whatever the dtype): its output would point at the island's
      // float32 scratch while later layers read it as 16-bit storage.
      st.island =
          st.island_view != nullptr ||
          (!st.layer->is_alias() && (!st.layer->supports_16bit() || (st.node->has_attr(kPrecisionAttr) &&
                                                                     node_precision(*st.node) == Precision::kFp32)));
      st.host_in = st.layer->host_inputs();
      // Plans with sync points (runner_segments.cc): data-dependent and control-flow layers run as float32 islands
      // there (their float32 outputs rounded to 16 bits once their shapes are known; bodies are float32 plans).
      KILNRT_CHECK(sync_points_ == 0 || st.island ||
                       !(st.data_dependent || dynamic_cast<const ControlFlowLayer*>(st.layer.get())),
                   kUnsupported, st.node->describe(),
                   "a data-dependent or control-flow layer with 16-bit kernels is not supported in --fp16 / --bf16 "
                   "engines (it must run as a float32 island)");
    }
    // KILNRT_CUDA_NHWC=1 / =0 forces NHWC / NCHW; else the layout the builder timed (kLayoutAttr); else (older or
    // dynamic-shape engines) where predicted to win (layout_timing.h). The segmented run of plans with sync points
    // (runner_segments.cc) keeps every value NCHW.
    const LayoutPolicy layout =
        layout_policy(std::getenv("KILNRT_CUDA_NHWC"), recorded_layout(graph), sync_points_ > 0);
    if (layout.plan) plan_layouts(graph, layout.forced);
    if (std::string(layout.source) != "prediction")
      KILNRT_LOG(kInfo, "storage layout from " << layout.source << ": " << (layout.plan ? "NHWC" : "NCHW"));
  }
  for (const std::string& name : device_constants) {
    const Tensor& t = graph.constants.at(name);
    if (weights_->find(name)) continue;  // in the engine's stored device weights (plan_weights.h)
    KILNRT_CHECK(weights_->has_host_data(name), kInvalidEngine, name,
                 "weight '" << name << "' is stored for the GPU only but is missing from the device weights");
    if (act16_ != DType::kUndefined && t.dtype() == DType::kFloat32)
      weights_->upload(name, to_16(t, act16_));
    else
      weights_->upload(name, t);
  }
  const_ptr_.assign(slot_names_.size(), nullptr);
  for (const std::string& name : device_constants) const_ptr_[slot_of_.at(name)] = weights_->get(name);
}

CudaPlan::~CudaPlan() = default;

void CudaPlan::plan_layouts(const ir::Graph& graph, bool forced) {
  LayoutProblem p;
  const size_t nslots = slot_names_.size();
  p.rank4.assign(nslots, 0);
  p.pinned_nchw.assign(nslots, 0);
  p.layout_free.assign(nslots, 0);
  for (size_t s = 0; s < nslots; ++s) {
    const ir::TensorType* t = graph.type_of(slot_names_[s]);
    p.rank4[s] = t && t->has_shape && t->shape.size() == 4;
    p.pinned_nchw[s] = host_slot_[s] || graph.is_constant(slot_names_[s]);
    p.layout_free[s] = layout_free_type(t);
  }
  for (int s : input_slots_) p.pinned_nchw[s] = 1;
  for (int s : output_slots_) p.pinned_nchw[s] = 1;
  for (const Step& st : steps_) {
    LayoutStep ls;
    ls.device = !st.host;
    ls.nhwc_capable = !st.host && st.layer->supports_nhwc();
    ls.alias = !st.host && st.layer->is_alias();
    ls.island = st.island;
    if (ls.device && !ls.alias && !ls.island && !ls.nhwc_capable) ls.kind = layout_kind_of(*st.node, graph);
    ls.depthwise = ls.nhwc_capable && depthwise_conv(*st.node, graph);
    ls.depthwise_fast = ls.depthwise && depthwise_nhwc_fast(*st.node, graph);
    ls.inputs = st.inputs;
    ls.outputs = st.outputs;
    p.steps.push_back(std::move(ls));
  }
  LayoutDecision d = decide_layouts(p);
  if (!forced && !predict_nhwc_win(d)) {
    KILNRT_LOG(kInfo, "NHWC storage not predicted to win (" << d.reformats << " reformats, " << d.nhwc_depthwise
                                                            << " depthwise convs among " << d.nhwc_steps
                                                            << " NHWC layers): NCHW");
    return;
  }
  nhwc_slot_ = std::move(d.nhwc_slot);
  for (size_t i = 0; i < steps_.size(); ++i) {
    steps_[i].nhwc = d.step_nhwc[i] != 0;
    steps_[i].view = d.view[i] != 0;
    steps_[i].nhwc_shapes = steps_[i].nhwc && p.steps[i].kind == LayoutKind::kElementwise;
    steps_[i].nhwc_native = steps_[i].nhwc && p.steps[i].nhwc_capable;
    bool any = false;
    for (int8_t r : d.reformat[i]) any |= r != 0;
    if (any) steps_[i].reformat = std::move(d.reformat[i]);
  }
  KILNRT_LOG(kInfo, "NHWC storage: " << std::count(nhwc_slot_.begin(), nhwc_slot_.end(), 1) << " values, "
                                     << d.reformats << " reformatted layer inputs");
}

std::vector<std::pair<std::string, std::string>> CudaPlan::tactics() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Step& s : steps_)
    out.emplace_back(s.node->name, s.host ? "host:shape-computation"
                                          : "cuda:" + s.layer->tactic() + (s.island_view ? "+fp32-island" : "") +
                                                (s.view   ? "+nhwc-view"
                                                 : s.nhwc ? "+nhwc"
                                                          : "") +
                                                (s.reformat.empty() ? "" : "+reformat"));
  return out;
}

// ---- runner ----------------------------------------------------------------------------------------------------

const char* CudaRunner::mode_name(Mode m) {
  switch (m) {
    case Mode::kNone: return "none";
    case Mode::kDirect: return "direct";
    case Mode::kGraphCapture: return "graph-capture";
    case Mode::kGraphReplay: return "graph-replay";
    case Mode::kCallerCapture: return "caller-capture";
  }
  return "?";
}

CudaRunner::CudaRunner(const CudaPlan& plan) : plan_(plan) {
  handles_.device = plan.device_;
  // The workspace is allocated by the first prepare() (in relaxed capture mode: a context may be created while
  // the caller's stream captures).
  const char* env = std::getenv("KILNRT_CUDA_GRAPHS");
  if (env && (std::string(env) == "0" || std::string(env) == "off" || std::string(env) == "false"))
    graphs_enabled_ = false;
}

CudaRunner::~CudaRunner() {
  // Graphs are destroyed before the arena / workspace they address (members are destroyed after this body).
  drop_graphs();
}

void CudaRunner::drop_graphs() noexcept {
  for (ShapeState* st : graph_lru_) st->drop_graphs();
  graph_lru_.clear();
}

StreamT CudaRunner::aux_stream() {
  if (!aux_) aux_ = kilnrt::cuda::Stream(plan_.device_, /*non_blocking=*/true);
  return static_cast<StreamT>(aux_.get());
}

void CudaRunner::ensure_resources() {
  if (!workspace_data()) workspace_ = kilnrt::cuda::DeviceBuffer(plan_.device_, kWorkspaceBytes);
  if (!done_) done_ = kilnrt::cuda::Event(plan_.device_);
  // Library handles are created here rather than lazily inside the first launch, which may be captured.
  for (const CudaPlan::Step& step : plan_.steps_) {
    if (step.host) continue;
    const std::string tactic = step.layer->tactic();
    if (tactic.rfind("cudnn:", 0) == 0) handles_.get_cudnn();
    // cuBLASLt layers, and convs whose timed tactic (conv_tactics.h) is a cuBLASLt GEMM: "[timed ...=cublaslt:0]".
    // pw-mma (own 1x1-conv GEMM) falls back to cuBLASLt on misaligned operands: its handle too.
    if (tactic.rfind("cublaslt:", 0) == 0 || tactic.find("=cublaslt:") != std::string::npos ||
        tactic.find("=pw-mma:") != std::string::npos)
      handles_.get_cublaslt();
  }
}

void CudaRunner::grow_arena(size_t bytes, StreamT stream, bool capturing) {
  kilnrt::cuda::ContextGuard guard(plan_.device_);
  const auto& api = guard.api();
  if (capturing || arena_in_caller_capture_) {
    // Nothing can be waited for, or a caller's captured graph addresses the old arena / graphs: keep them.
    if (arena_.data()) retained_.push_back(std::move(arena_));
    for (ShapeState* st : graph_lru_) {
      retained_graphs_.push_back(std::move(st->graph));
      if (st->direct_graph) retained_graphs_.push_back(std::move(st->direct_graph));
    }
    graph_lru_.clear();
  } else {
    if (arena_used_) {
      // The last work on the arena may be on another stream than `stream` (output_shapes() prepares on the
      // context's own stream): wait for the recorded event as well.
      if (done_) done_.synchronize();
      KILNRT_CU_CHECK(api, api.StreamSynchronize(stream), "activation arena");
    }
    drop_graphs();  // they address the old arena
    retained_graphs_.clear();
  }
  arena_ = kilnrt::cuda::DeviceBuffer();  // free before allocating the larger one (when not retained)
  arena_ = kilnrt::cuda::DeviceBuffer(plan_.device_, bytes);
  arena_used_ = false;
  arena_in_caller_capture_ = false;
}

size_t CudaRunner::prepared_arena_bytes() const {
  if (plan_.sync_points_ > 0) return 0;  // segmented runs use their own pool (runner_segments.cc)
  KILNRT_CHECK(current_, kInternal, "CudaRunner", "prepare() was not called");
  return current_->arena_bytes;
}

void CudaRunner::prepare(const std::vector<Shape>& input_shapes, StreamT stream) {
  const kilnrt::cuda::CaptureStatus capture = kilnrt::cuda::stream_capture_status(stream, plan_.device_);
  KILNRT_CHECK(capture != kilnrt::cuda::CaptureStatus::kInvalidated, kInvalidArgument, "stream",
               "the stream's CUDA graph capture was already invalidated by an earlier operation (not by kilnrt): "
               "end the capture (cuStreamEndCapture / leave torch.cuda.graph) and remove the operation that is not "
               "allowed while capturing (a synchronisation, an allocation, work on the legacy default stream)");
  if (plan_.sync_points_ > 0) return prepare_segmented(input_shapes, stream);
  const bool capturing = capture == kilnrt::cuda::CaptureStatus::kActive;
  auto found = states_.find(input_shapes);
  if (found != states_.end() && workspace_data() && arena_size() >= found->second->arena_bytes) {
    current_ = found->second.get();  // the hot path: nothing to allocate
    return;
  }
  // Allocation below must not invalidate a capture in progress on this thread (the caller's, GLOBAL mode included,
  // possibly on another stream than `stream`): relaxed capture mode. It changes nothing when nothing captures.
  kilnrt::cuda::RelaxedCaptureMode relaxed;
  ensure_resources();
  if (found != states_.end()) {
    current_ = found->second.get();
    if (!external_arena_ && arena_size() < current_->arena_bytes) grow_arena(current_->arena_bytes, stream, capturing);
    return;
  }
  finish_prepare(layout_for(input_shapes), input_shapes, stream, capturing);
}

void CudaRunner::finish_prepare(std::unique_ptr<ShapeState> st, const std::vector<Shape>& input_shapes, StreamT stream,
                                bool capturing) {
  const size_t nslots = plan_.slot_names_.size();
  // Host values read on the device: one upload per shape tuple.
  st->upload_offset.assign(nslots, -1);
  size_t upload_bytes = 0;
  for (size_t s = 0; s < nslots; ++s) {
    if (!plan_.upload_slot_[s]) continue;
    st->upload_offset[s] = static_cast<int64_t>(upload_bytes);
    upload_bytes += align_up(std::max<size_t>(1, st->host_values[s].numel() * dtype_size(st->storage[s])));
  }
  if (upload_bytes > 0) {
    // On the private stream, from pageable memory (no pinned allocation / free, which would synchronise the
    // context), synchronised alone: the caller's stream is neither used nor waited for.
    kilnrt::cuda::ContextGuard guard(plan_.device_);
    const auto& api = guard.api();
    st->uploads = kilnrt::cuda::DeviceBuffer(plan_.device_, upload_bytes);
    std::vector<unsigned char> staging(upload_bytes, 0);
    for (size_t s = 0; s < nslots; ++s) {
      if (st->upload_offset[s] < 0 || st->host_values[s].nbytes() == 0) continue;
      const Tensor& hv = st->host_values[s];
      if (st->storage[s] != hv.dtype() && hv.dtype() == DType::kFloat32)  // 16-bit engine: converted, clamped
        convert_16(hv.data<float>(), reinterpret_cast<uint16_t*>(staging.data() + st->upload_offset[s]), hv.numel(),
                   st->storage[s]);
      else
        std::memcpy(staging.data() + st->upload_offset[s], hv.raw(), hv.nbytes());
    }
    StreamT aux = aux_stream();
    KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(st->uploads.data()), staging.data(), upload_bytes, aux),
                    "shape-computation upload");
    KILNRT_CU_CHECK(api, api.StreamSynchronize(aux), "shape-computation upload");  // once per new shape tuple
  }
  if (!external_arena_ && arena_size() < st->arena_bytes) grow_arena(st->arena_bytes, stream, capturing);
  for (size_t i = 0; i < input_shapes.size(); ++i) st->label += (i ? "," : "[") + shape_to_string(input_shapes[i]);
  st->label += "]";
  current_ = st.get();
  states_[input_shapes] = std::move(st);
}

std::vector<Shape> CudaRunner::output_shapes() const {
  if (plan_.sync_points_ > 0) return segmented_output_shapes();
  KILNRT_CHECK(current_, kInternal, "CudaRunner", "prepare() was not called");
  std::vector<Shape> out;
  for (int s : plan_.output_slots_) out.push_back(current_->shapes[s]);
  return out;
}

void* CudaRunner::input_device_ptr(size_t i) {
  if (plan_.sync_points_ > 0) return segmented_input_ptr(i);
  KILNRT_CHECK(current_, kInternal, "CudaRunner", "prepare() was not called");
  const int64_t off32 = current_->in32_offset.at(i);
  return arena_data() + (off32 >= 0 ? off32 : current_->arena_offset[plan_.input_slots_.at(i)]);
}

const void* CudaRunner::output_device_ptr(size_t i) const { return io_out(i); }

void CudaRunner::set_io_dtypes(const std::vector<DType>& inputs, const std::vector<DType>& outputs) {
  const ir::Graph& g = plan_.graph_;
  const DType a16 = plan_.act16_;
  auto flags = [&](const std::vector<DType>& want, const std::vector<std::string>& names) {
    std::vector<bool> f(names.size(), false);
    for (size_t i = 0; i < names.size() && i < want.size(); ++i) {
      const ir::TensorType* t = g.type_of(names[i]);
      f[i] = a16 != DType::kUndefined && want[i] == a16 && t && t->dtype == DType::kFloat32;
    }
    return f;
  };
  in16_ = flags(inputs, g.inputs);
  out16_ = flags(outputs, g.outputs);
}

void* CudaRunner::io_in(size_t i) const {
  return i < in32_.size() && in32_[i] ? in32_[i] : ptrs_.at(plan_.input_slots_.at(i));
}
void* CudaRunner::io_out(size_t i) const {
  return i < out32_.size() && out32_[i] ? out32_[i] : ptrs_.at(plan_.output_slots_.at(i));
}
size_t CudaRunner::io_bytes(const ShapeState& st, size_t i, bool output) const {
  const int s = (output ? plan_.output_slots_ : plan_.input_slots_).at(i);
  const std::vector<void*>& staging = output ? out32_ : in32_;
  return shape_numel(st.shapes[s]) * dtype_size(i < staging.size() && staging[i] ? st.dtypes[s] : st.storage[s]);
}

void CudaRunner::enqueue(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, StreamT stream) {
  if (plan_.sync_points_ > 0) return enqueue_segmented(inputs, outputs, stream);
  KILNRT_CHECK(current_, kInternal, "CudaRunner", "prepare() was not called");
  ShapeState& st = *current_;
  if (kilnrt::cuda::stream_is_capturing(stream, plan_.device_)) {
    // The caller captures its stream (torch.cuda.graph): launch directly so that its graph records the layers —
    // after a private warm-up when this tuple never ran here (libraries initialise outside the capture).
    if (st.calls == 0) warm_up_privately(st);
    resolve_pointers(st, inputs);
    arena_in_caller_capture_ = true;  // the caller's graph addresses this arena from now on: never freed
    launch_layers(st, outputs, stream);
    last_mode_ = Mode::kCallerCapture;
    ++stats_.caller_captured;
    return;
  }
  if (graphs_enabled_ && !profiler_ && !st.graph_failed() && (st.graph || st.calls > 0)) {
    enqueue_with_graph(st, inputs, outputs, stream);
  } else {
    resolve_pointers(st, inputs);
    if (profiler_) profiler_->start_run(stream, /*gate=*/st.calls > 0);
    if (st.calls == 0) {
      // The first call with a shape tuple is the warm-up: direct launches, whose first kernels may be loaded lazily
      // (a context-wide synchronisation): not while another thread captures a graph.
      kilnrt::cuda::CaptureGate gate(plan_.device_, kilnrt::cuda::CaptureGate::Kind::kExclusive);
      launch_layers(st, outputs, stream);
    } else {
      launch_layers(st, outputs, stream);
    }
    if (profiler_) profiler_->finish_run();
    ++st.calls;
    last_mode_ = Mode::kDirect;
    ++stats_.direct;
  }
  arena_used_ = true;
  done_.record(stream);
}

void CudaRunner::warm_up_privately(ShapeState& st) {
  kilnrt::cuda::RelaxedCaptureMode relaxed;
  kilnrt::cuda::CaptureGate gate(plan_.device_, kilnrt::cuda::CaptureGate::Kind::kExclusive);
  kilnrt::cuda::ContextGuard guard(plan_.device_);
  const auto& api = guard.api();
  StreamT aux = aux_stream();
  // Work enqueued on the arena before the caller's capture began may still run: warm up in a scratch arena then
  // (kept: freeing it would synchronise the context inside the caller's capture).
  kilnrt::cuda::DeviceBuffer scratch;
  char* base = arena_data();
  if (arena_used_) {
    scratch = kilnrt::cuda::DeviceBuffer(plan_.device_, st.arena_bytes);
    base = static_cast<char*>(scratch.data());
  }
  resolve_pointers(st, {});
  if (arena_used_) {
    auto remap = [&](std::vector<void*>& v) {
      for (void*& p : v) {
        char* c = static_cast<char*>(p);
        char* a = arena_data();
        if (c >= a && c < a + arena_size()) p = base + (c - a);
      }
    };
    remap(ptrs_);
    remap(in32_);
    remap(out32_);
    launch_base_ = base;
  }
  // Zeroed inputs: valid indices for Gather-like layers, whatever the caller's memory holds right now.
  for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
    const size_t bytes = io_bytes(st, i, false);
    if (bytes > 0 && io_in(i))
      KILNRT_CU_CHECK(api, api.MemsetD8Async(dptr(io_in(i)), 0, bytes, aux), "private warm-up");
  }
  launch_layers(st, {}, aux);
  KILNRT_CU_CHECK(api, api.StreamSynchronize(aux), "private warm-up");
  if (scratch.data()) retained_.push_back(std::move(scratch));
  ++st.calls;
}

namespace {
bool direct_io_graphs_enabled() {
  static const bool on = !env_switched_off("KILNRT_DIRECT_IO_GRAPHS");
  return on;
}
}  // namespace

void CudaRunner::enqueue_with_graph(ShapeState& st, const std::vector<const void*>& inputs,
                                    const std::vector<void*>& outputs, StreamT stream) {
  kilnrt::cuda::ContextGuard guard(plan_.device_);
  const auto& api = guard.api();
  // The hot path of a caller that binds the same buffers again: the graph captured on them, launched at once (the
  // pointer tables below are only needed to capture, or to copy through the arena).
  if (st.graph && !st.direct_failed && direct_graph_matches(st, inputs, outputs) && direct_io_graphs_enabled()) {
    touch_graph(st);
    st.last_in = inputs;
    st.last_out = outputs;
    launch_direct(st, stream);
    return;
  }
  // Inputs and outputs of the graph live in the arena (stable addresses); pointers are resolved without the caller's.
  resolve_pointers(st, {});
  Mode mode = Mode::kGraphReplay;
  if (!st.graph) {
    auto graph = std::make_unique<kilnrt::cuda::CudaGraph>(plan_.device_);
    try {
      graph->capture([&](kilnrt::cuda::StreamHandle cs) { launch_layers(st, {}, static_cast<StreamT>(cs)); });
    } catch (const Error& e) {
      ++st.capture_failures;
      ++stats_.capture_failures;
      KILNRT_LOG(kWarning, "CUDA graph capture failed for input shapes "
                               << st.label << " (attempt " << st.capture_failures << " of " << kMaxCaptureAttempts
                               << "); running its layers without a graph" << (st.graph_failed() ? "" : " this time")
                               << ": " << e.what());
      // Library handles used in a failed capture may keep state bound to it: start over with new ones.
      handles_.reset();
      kilnrt::cuda::CaptureGate gate(plan_.device_, kilnrt::cuda::CaptureGate::Kind::kExclusive);
      resolve_pointers(st, inputs);
      launch_layers(st, outputs, stream);
      last_mode_ = Mode::kDirect;
      ++stats_.direct;
      return;
    }
    if (graph_lru_.size() >= kMaxGraphs) {
      graph_lru_.front()->drop_graphs();
      graph_lru_.erase(graph_lru_.begin());
      ++stats_.evictions;
    }
    st.graph = std::move(graph);
    graph_lru_.push_back(&st);
    mode = Mode::kGraphCapture;
    ++stats_.captures;
    KILNRT_LOG(kDebug, "CUDA graph captured for input shapes " << st.label << " (" << st.graph->kernel_count()
                                                               << " kernel nodes)");
  } else {
    touch_graph(st);
  }
  if (mode == Mode::kGraphReplay && launch_direct_io_graph(st, inputs, outputs, stream)) return;
  // Bound inputs -> the graph's input buffers, on the caller's stream (the arena input is the source already when
  // the caller staged there, e.g. run()).
  for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
    if (i >= inputs.size() || !inputs[i]) continue;
    const int s = plan_.input_slots_[i];
    const size_t bytes = io_bytes(st, i, false);
    if (bytes > 0 && inputs[i] != io_in(i))
      KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(io_in(i)), dptr(inputs[i]), bytes, stream),
                      "input '" + plan_.slot_names_[s] + "'");
  }
  st.graph->launch(stream);
  for (size_t i = 0; i < plan_.output_slots_.size(); ++i) {
    if (i >= outputs.size() || !outputs[i]) continue;
    const int s = plan_.output_slots_[i];
    const size_t bytes = io_bytes(st, i, true);
    if (bytes > 0 && outputs[i] != io_out(i))
      KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(outputs[i]), dptr(io_out(i)), bytes, stream),
                      "output '" + plan_.slot_names_[s] + "'");
  }
  last_mode_ = mode;
  if (mode == Mode::kGraphReplay) ++stats_.replays;
  KILNRT_LOG(kVerbose, "CUDA graph " << mode_name(mode) << " for input shapes " << st.label);
}

bool CudaRunner::launch_direct_io_graph(ShapeState& st, const std::vector<const void*>& inputs,
                                        const std::vector<void*>& outputs, StreamT stream) {
  const bool repeated = inputs == st.last_in && outputs == st.last_out;
  st.last_in = inputs;
  st.last_out = outputs;
  if (!direct_io_graphs_enabled() || st.direct_failed) return false;
  // Only worth it (and only then different from the copying graph) when the caller's memory is read / written.
  bool caller_memory = false;
  for (size_t i = 0; i < inputs.size() && i < plan_.input_slots_.size(); ++i)
    caller_memory |= inputs[i] != nullptr && inputs[i] != io_in(i);
  for (void* p : outputs) caller_memory |= p != nullptr;
  if (!caller_memory) return false;
  if (!direct_graph_matches(st, inputs, outputs)) {
    if (!repeated) return false;  // pointers that change every call: the copying graph, no capture per call
    auto graph = std::make_unique<kilnrt::cuda::CudaGraph>(plan_.device_);
    try {
      graph->capture([&](kilnrt::cuda::StreamHandle cs) {
        resolve_pointers(st, inputs, outputs);
        launch_layers(st, outputs, static_cast<StreamT>(cs));
      });
    } catch (const Error& e) {
      st.direct_failed = true;
      handles_.reset();
      KILNRT_LOG(kDebug, "CUDA graph capture on the caller's buffers failed for input shapes "
                             << st.label << "; the graph copying through the arena is used: " << e.what());
      return false;
    }
    st.direct_graph = std::move(graph);
    st.direct_in = inputs;
    st.direct_out = outputs;
    ++stats_.direct_io_captures;
  }
  launch_direct(st, stream);
  return true;
}

bool CudaRunner::direct_graph_matches(const ShapeState& st, const std::vector<const void*>& inputs,
                                      const std::vector<void*>& outputs) {
  return st.direct_graph && inputs == st.direct_in && outputs == st.direct_out;
}

void CudaRunner::launch_direct(ShapeState& st, StreamT stream) {
  st.direct_graph->launch(stream);
  ++stats_.direct_io_replays;
  last_mode_ = Mode::kGraphReplay;
  ++stats_.replays;
}

void CudaRunner::touch_graph(ShapeState& st) {
  auto it = std::find(graph_lru_.begin(), graph_lru_.end(), &st);
  if (it != graph_lru_.end() && it + 1 != graph_lru_.end()) {
    graph_lru_.erase(it);
    graph_lru_.push_back(&st);
  }
}

void CudaRunner::resolve_pointers(const ShapeState& st, const std::vector<const void*>& inputs,
                                  const std::vector<void*>& outputs) {
  const size_t nslots = plan_.slot_names_.size();
  ptrs_.assign(nslots, nullptr);
  char* arena = arena_data();
  for (size_t s = 0; s < nslots; ++s) {
    if (st.upload_offset[s] >= 0)
      ptrs_[s] = static_cast<char*>(st.uploads.data()) + st.upload_offset[s];
    else if (st.arena_offset[s] >= 0)
      ptrs_[s] = arena + st.arena_offset[s];
  }
  launch_base_ = arena;
  in32_.assign(plan_.input_slots_.size(), nullptr);
  out32_.assign(plan_.output_slots_.size(), nullptr);
  for (size_t i = 0; i < in32_.size(); ++i)
    if (st.in32_offset[i] >= 0) in32_[i] = arena + st.in32_offset[i];
  for (size_t i = 0; i < out32_.size(); ++i)
    if (st.out32_offset[i] >= 0) out32_[i] = arena + st.out32_offset[i];
  for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
    if (i >= inputs.size() || !inputs[i]) continue;
    if (in32_[i])
      in32_[i] = const_cast<void*>(inputs[i]);  // converted to 16-bit by the first launch
    else
      ptrs_[plan_.input_slots_[i]] = const_cast<void*>(inputs[i]);
  }
  for (size_t i = 0; i < outputs.size() && i < plan_.output_slots_.size(); ++i) {
    if (!outputs[i]) continue;
    const int s = plan_.output_slots_[i];
    if (out32_[i]) {
      out32_[i] = outputs[i];  // the 16-bit -> float32 conversion writes the caller's memory
      continue;
    }
    bool graph_input = false;
    for (int in : plan_.input_slots_) graph_input |= in == s;
    // Its own arena storage only (aliases, inputs, uploads and constants keep theirs: the final copy handles them).
    if (!graph_input && st.arena_offset[s] >= 0 && st.upload_offset[s] < 0 && !plan_.const_ptr_[s] &&
        std::count(plan_.output_slots_.begin(), plan_.output_slots_.end(), s) == 1)
      ptrs_[s] = outputs[i];
  }
  for (size_t s = 0; s < nslots; ++s) {
    if (plan_.const_ptr_[s])
      ptrs_[s] = const_cast<void*>(plan_.const_ptr_[s]);
    else if (st.arena_offset[s] <= -2)
      ptrs_[s] = ptrs_[-2 - st.arena_offset[s]];  // alias of its storage root
  }
}

void CudaRunner::launch_layers(const ShapeState& st, const std::vector<void*>& outputs, StreamT stream) {
  kilnrt::cuda::ContextGuard guard(plan_.device_);
  const auto& api = guard.api();
  LayerLaunch launch;
  launch.stream = stream;
  launch.libs = &handles_;
  launch.workspace = workspace_data();
  launch.workspace_bytes = workspace_size();
  const int bf = plan_.act16_ == DType::kBFloat16 ? 1 : 0;
  char* arena = launch_base_;  // scratch of islands: in the arena ptrs_ point into (the warm-up may use another)
  if (ptrs_.size() && !plan_.input_slots_.empty() && in32_.size()) {
    // Float32 graph inputs of 16-bit engines -> their 16-bit storage (first use).
    for (size_t i = 0; i < in32_.size(); ++i) {
      const int s = plan_.input_slots_[i];
      if (in32_[i])
        check_launch(kilnrt::cuda::kernels::f32_to_16(static_cast<const float*>(in32_[i]), ptrs_[s],
                                                      shape_numel(st.shapes[s]), bf, stream),
                     plan_.slot_names_[s], "f32_to_16");
    }
  }
  for (size_t si = 0; si < plan_.steps_.size(); ++si) {
    const CudaPlan::Step& step = plan_.steps_[si];
    if (step.host) continue;
    const ir::Node& node = *step.node;
    const std::vector<int64_t>& sc = st.scratch[si];
    const bool timed = profiler_ && profiler_->armed() && !step.layer->is_alias() && !step.view;
    if (timed) profiler_->begin(si, stream);
    launch.inputs.assign(step.inputs.size(), LayerTensor{});
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int in = step.inputs[i];
      if (in < 0) continue;
      LayerTensor& t = launch.inputs[i];
      t.present = true;
      t.shape = st.shapes[in];
      t.dtype = st.storage[in];
      t.host = st.host_values[in].defined() ? &st.host_values[in] : nullptr;
      t.data = plan_.graph_.is_constant(plan_.slot_names_[in]) ? plan_.const_ptr_[in] : ptrs_[in];
      if (!plan_.nhwc_slot_.empty()) t.nhwc = plan_.nhwc_slot_[in] != 0;
      if (!step.reformat.empty() && step.reformat[i] != 0 && !sc.empty() && sc[i] >= 0) {
        void* copy = arena + sc[i];
        const bool to_nhwc = step.reformat[i] > 0;
        check_launch(reformat_4d(t.data, copy, t.shape, dtype_size(t.dtype), to_nhwc, stream), node.describe(),
                     "reformat_4d");
        t.data = copy;
        t.nhwc = to_nhwc;
      }
      if (step.nhwc_native && (i == 0 || i == 3) && t.shape.size() == 4) t.nhwc = true;    // layout-free ones too
      if (step.nhwc_shapes && t.shape.size() <= 4) t.shape = nhwc_logical_shape(t.shape);  // layout_plan.h
      if (step.island && island_converts(st.dtypes[in], st.storage[in], step.island_view != nullptr)) {
        t.dtype = DType::kFloat32;  // the layer sees float32 (float32_island.h)
        if (!sc.empty() && sc[i] >= 0) {
          void* f32 = arena + sc[i];
          const int ibf = st.storage[in] == DType::kBFloat16 ? 1 : 0;
          check_launch(kilnrt::cuda::kernels::f16_to_32(t.data, static_cast<float*>(f32), t.numel(), ibf, stream),
                       node.describe(), "f16_to_32");
          t.data = f32;
        }
      }
    }
    if (step.layer->is_alias() || step.view) {
      if (step.outputs[0] >= 0) ptrs_[step.outputs[0]] = const_cast<void*>(launch.inputs[0].data);
      continue;
    }
    launch.outputs.assign(step.outputs.size(), LayerOutput{});
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int os = step.outputs[o];
      if (os < 0) continue;
      launch.outputs[o] = LayerOutput{ptrs_[os], st.storage[os], st.shapes[os], true};
      if (!plan_.nhwc_slot_.empty()) launch.outputs[o].nhwc = plan_.nhwc_slot_[os] != 0;
      if (o == 0 && step.nhwc_native && st.shapes[os].size() == 4) launch.outputs[o].nhwc = true;
      if (o == 0 && step.nhwc_shapes) launch.outputs[o].shape = nhwc_logical_shape(st.shapes[os]);
      const size_t k = step.inputs.size() + o;
      if (step.island && !sc.empty() && sc[k] >= 0)
        launch.outputs[o] = LayerOutput{arena + sc[k], DType::kFloat32, st.shapes[os], true};
    }
    try {
      step.layer->enqueue(launch);
    } catch (const Error& e) {
      if (e.where().find(node.name) != std::string::npos) throw;
      throw e.with_context(node.describe());
    }
    if (step.island && !sc.empty()) {
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const size_t k = step.inputs.size() + o;
        if (sc[k] < 0) continue;
        const LayerOutput& out = launch.outputs[o];
        const int obf = st.storage[step.outputs[o]] == DType::kBFloat16 ? 1 : 0;
        check_launch(kilnrt::cuda::kernels::f32_to_16(static_cast<const float*>(out.data), ptrs_[step.outputs[o]],
                                                      out.numel(), obf, stream),
                     node.describe(), "f32_to_16");
      }
    }
    if (timed) profiler_->end(si, stream);
  }
  // 16-bit outputs -> float32 graph outputs (the model's dtype).
  for (size_t i = 0; i < out32_.size(); ++i) {
    const int s = plan_.output_slots_[i];
    if (out32_[i])
      check_launch(kilnrt::cuda::kernels::f16_to_32(ptrs_[s], static_cast<float*>(out32_[i]), shape_numel(st.shapes[s]),
                                                    bf, stream),
                   plan_.slot_names_[s], "f16_to_32");
  }
  for (size_t i = 0; i < plan_.output_slots_.size(); ++i) {
    const int s = plan_.output_slots_[i];
    if (i >= outputs.size() || !outputs[i]) continue;
    const size_t bytes = io_bytes(st, i, true);
    if (bytes > 0 && outputs[i] != io_out(i))
      KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(outputs[i]), dptr(io_out(i)), bytes, stream),
                      "output '" + plan_.slot_names_[s] + "'");
  }
}

}  // namespace kilnrt::backends::cuda
