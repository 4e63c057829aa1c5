// Segmented runs of CUDA plans with sync points (docs/cuda-backend.md, "Data-dependent shapes"): a layer whose
// output shape depends on data (DataDependentLayer: NonZero, Compress), or a device value that a layer reads on the
// host (Reshape's shape, Range's limits, TopK's k ... computed on the GPU). Such a plan cannot be laid out per input
// shape tuple ahead of the run, so enqueue() walks the steps in order: host steps are evaluated on the host, device
// layers are sized by their shape functions from what is known so far and launched on the caller's stream; at a
// sync point the stream is synchronised once (a device value copied to the host, or a data-dependent layer reading
// its count) and the rest of the run is sized from there. Values live in a pool of chunks kept across runs. No CUDA
// graph is captured for these plans, and a caller's capture is refused with a clear error (a sync cannot be
// captured). Plans without sync points never come here: their path (cuda_plan.cc) is unchanged.
// --fp16 / --bf16 engines (plan_.act16_): float32 values are stored in the engine's 16-bit dtype between layers, as
// in the static path (storage rule of runner_layout.cc): graph inputs converted on entry, outputs back on exit,
// host values converted when uploaded, device values read at a sync point converted back to float32 on the host;
// islands (layers without 16-bit kernels, data-dependent and control-flow layers among them: their bodies are
// float32 plans) read float32 copies in the pool and write float32 scratch that is rounded to 16 bits after.
#include <algorithm>

#include "backends/cuda/control_flow/control_flow_layer.h"
#include "ops/cuda/data_dependent_layer.h"
#include "backends/cuda/float32_island.h"
#include "backends/cuda/plan_internal.h"
#include "backends/cuda/runner_profiling.h"
#include "core/logging.h"
#include "cuda/capture_safety.h"

namespace kilnrt::backends::cuda {
using namespace plan_detail;

namespace {

constexpr size_t kMinChunkBytes = size_t(16) << 20;

void check_not_capturing(StreamT stream, int device, int sync_points) {
  KILNRT_CHECK(
      !kilnrt::cuda::stream_is_capturing(stream, device), kUnsupported, "stream",
      "this engine has data-dependent shapes ("
          << sync_points
          << " sync point(s): NonZero / Compress, or a "
             "GPU-computed value read on the host such as a Reshape shape): it synchronises its stream mid-run, "
             "which a CUDA graph capture cannot record; run it outside the capture");
}

}  // namespace

void* CudaRunner::Segmented::alloc(int device, size_t bytes) {
  bytes = align_up(std::max<size_t>(bytes, 1));
  while (chunk < chunks.size() && used + bytes > chunks[chunk].size()) {
    ++chunk;
    used = 0;
  }
  if (chunk == chunks.size()) {
    size_t total = 0;
    for (const auto& c : chunks) total += c.size();
    chunks.emplace_back(device, std::max({bytes, kMinChunkBytes, total}));
    used = 0;
  }
  void* p = static_cast<char*>(chunks[chunk].data()) + used;
  used += bytes;
  return p;
}

const DeviceSequence* CudaRunner::sequence_output(size_t i) const {
  if (!seg_) return nullptr;
  const size_t s = static_cast<size_t>(plan_.output_slots_.at(i));
  return s < seg_->is_sequence.size() && seg_->is_sequence[s] ? &seg_->sequences[s] : nullptr;
}

uint64_t CudaRunner::sync_count() const { return seg_ ? seg_->syncs : 0; }

size_t CudaRunner::segmented_memory_bytes() const {
  if (!seg_) return 0;
  size_t bytes = 0;
  for (const auto& c : seg_->chunks) bytes += c.size();
  for (const auto& b : seg_->staged) bytes += b.size();
  return bytes;
}

void CudaRunner::prepare_segmented(const std::vector<Shape>& input_shapes, StreamT stream) {
  check_not_capturing(stream, plan_.device_, plan_.sync_points_);
  ensure_resources();
  if (!seg_) seg_ = std::make_unique<Segmented>();
  Segmented& sg = *seg_;
  const ir::Graph& g = plan_.graph_;
  KILNRT_CHECK(input_shapes.size() == plan_.input_slots_.size(), kInternal, "CudaRunner",
               "expected " << plan_.input_slots_.size() << " input shapes, got " << input_shapes.size());
  sg.staged.resize(input_shapes.size());
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const size_t bytes = shape_numel(input_shapes[i]) * dtype_size(g.type_of(g.inputs[i])->dtype);
    if (sg.staged[i].size() >= std::max<size_t>(bytes, 1)) continue;
    if (arena_used_ && done_) done_.synchronize();  // an earlier run may still read the old staging
    sg.staged[i] = kilnrt::cuda::DeviceBuffer();
    sg.staged[i] = kilnrt::cuda::DeviceBuffer(plan_.device_, std::max<size_t>(bytes, 1));
  }
  if (!sg.ran || sg.input_shapes != input_shapes) {
    // Before a run with these shapes the data decides the outputs' shapes: the graph's static dims, 0 elsewhere.
    sg.out_shapes.clear();
    for (const std::string& out : g.outputs) {
      const ir::TensorType* t = g.type_of(out);
      Shape shape{0};
      if (t && t->has_shape) {
        shape.clear();
        for (const ir::Dim& d : t->shape) shape.push_back(d.known() ? d.value : 0);
      }
      sg.out_shapes.push_back(shape);
    }
    sg.ran = false;
  }
  sg.input_shapes = input_shapes;
}

std::vector<Shape> CudaRunner::segmented_output_shapes() const {
  KILNRT_CHECK(seg_, kInternal, "CudaRunner", "prepare() was not called");
  return seg_->out_shapes;
}

void* CudaRunner::segmented_input_ptr(size_t i) {
  KILNRT_CHECK(seg_, kInternal, "CudaRunner", "prepare() was not called");
  return seg_->staged.at(i).data();
}

void CudaRunner::enqueue_segmented(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                                   StreamT stream) {
  KILNRT_CHECK(seg_, kInternal, "CudaRunner", "prepare() was not called");
  check_not_capturing(stream, plan_.device_, plan_.sync_points_);
  Segmented& sg = *seg_;
  // Lazy kernel loading, allocations and syncs happen mid-run: not while another thread captures a CUDA graph.
  kilnrt::cuda::CaptureGate gate(plan_.device_, kilnrt::cuda::CaptureGate::Kind::kExclusive);
  kilnrt::cuda::ContextGuard guard(plan_.device_);
  const auto& api = guard.api();
  if (arena_used_ && done_) done_.synchronize();  // the previous run (maybe on another stream) may read the pool
  const ir::Graph& g = plan_.graph_;
  const size_t nslots = plan_.slot_names_.size();
  sg.shapes.assign(nslots, Shape{});
  sg.dtypes.assign(nslots, DType::kUndefined);
  sg.host_values.assign(nslots, Tensor());
  sg.sequences.assign(nslots, DeviceSequence{});  // sequence_steps.h
  sg.is_sequence.assign(nslots, 0);
  ptrs_.assign(nslots, nullptr);
  in32_.clear();
  out32_.clear();
  sg.chunk = 0;
  sg.used = 0;
  const DType a16 = plan_.act16_;
  // The storage dtype of a slot: its model dtype, or the engine's 16-bit dtype for float32 values (16-bit engines).
  auto store = [&](int s) { return a16 != DType::kUndefined && sg.dtypes[s] == DType::kFloat32 ? a16 : sg.dtypes[s]; };
  auto bf_of = [](DType t) { return t == DType::kBFloat16 ? 1 : 0; };
  for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
    const int s = plan_.input_slots_[i];
    sg.shapes[s] = sg.input_shapes.at(i);
    sg.dtypes[s] = g.type_of(g.inputs[i])->dtype;
    ptrs_[s] = i < inputs.size() && inputs[i] ? const_cast<void*>(inputs[i]) : sg.staged.at(i).data();
    if (store(s) != sg.dtypes[s]) {  // 16-bit engine: the float32 input -> its 16-bit storage in the pool
      if (in32_.empty()) in32_.assign(plan_.input_slots_.size(), nullptr);
      in32_[i] = ptrs_[s];
      ptrs_[s] = sg.alloc(plan_.device_, shape_numel(sg.shapes[s]) * dtype_size(store(s)));
      check_launch(kilnrt::cuda::kernels::f32_to_16(static_cast<const float*>(in32_[i]), ptrs_[s],
                                                    shape_numel(sg.shapes[s]), bf_of(store(s)), stream),
                   plan_.slot_names_[s], "f32_to_16");
    }
  }
  for (size_t i = 0; i < seq_inputs_.size() && i < plan_.input_slots_.size(); ++i) {
    if (!seq_inputs_[i]) continue;  // sequence inputs of a body (sequence_steps.h)
    const int s = plan_.input_slots_[i];
    sg.sequences[s] = *seq_inputs_[i];
    sg.is_sequence[s] = 1;
    sg.dtypes[s] = seq_inputs_[i]->dtype;
    sg.shapes[s] = Shape{};
  }
  for (const auto& [name, t] : g.constants) {
    auto it = plan_.slot_of_.find(name);
    if (it == plan_.slot_of_.end()) continue;
    sg.shapes[it->second] = t.shape();
    sg.dtypes[it->second] = t.dtype();
    sg.host_values[it->second] = t;
    ptrs_[it->second] = const_cast<void*>(plan_.const_ptr_[it->second]);  // 16-bit engines: uploaded in 16 bits
  }
  auto bytes_of = [&](int s) { return shape_numel(sg.shapes[s]) * dtype_size(store(s)); };
  LayerLaunch launch;
  launch.stream = stream;
  launch.libs = &handles_;
  launch.workspace = workspace_data();
  launch.workspace_bytes = workspace_size();
  // Profiling: per-layer events as in direct launches (no gate kernel: the run synchronises anyway).
  if (profiler_) profiler_->start_run(stream, /*gate=*/false);
  for (size_t si = 0; si < plan_.steps_.size(); ++si) {
    const CudaPlan::Step& step = plan_.steps_[si];
    const ir::Node& node = *step.node;
    if (step.host) {
      eval_host_step(step, sg.shapes, sg.dtypes, sg.host_values);
      for (int os : step.outputs) {
        if (os < 0 || !plan_.upload_slot_[os]) continue;
        // A host value a device layer (or the caller) reads on the device. Pageable source: the copy is staged
        // before the call returns, and the tensor outlives the run anyway.
        const Tensor& hv0 = sg.host_values[os];
        // 16-bit engines: a float32 host value is uploaded in its 16-bit storage (as the static path does).
        const Tensor hv = store(os) != hv0.dtype() && hv0.dtype() == DType::kFloat32 ? to_16(hv0, store(os)) : hv0;
        ptrs_[os] = sg.alloc(plan_.device_, hv.nbytes());
        if (hv.nbytes() > 0)
          KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(ptrs_[os]), hv.raw(), hv.nbytes(), stream), node.describe());
      }
      continue;
    }
    // Sync point: device values this layer reads on the host.
    for (int i : step.sync_in) {
      const int in = step.inputs[i];
      if (sg.host_values[in].defined()) continue;           // read at an earlier sync point of this run
      Tensor hv = Tensor::empty(store(in), sg.shapes[in]);  // read in its storage dtype
      if (hv.nbytes() > 0) {
        KILNRT_CU_CHECK(api, api.MemcpyDtoHAsync(hv.raw(), dptr(ptrs_[in]), hv.nbytes(), stream), node.describe());
        KILNRT_CU_CHECK(api, api.StreamSynchronize(stream), node.describe() + " (sync point)");
        ++sg.syncs;
      }
      if (hv.dtype() != sg.dtypes[in]) {  // 16-bit engine: the host reads the float32 value
        Tensor f = Tensor::empty(DType::kFloat32, hv.shape());
        const uint16_t* h = static_cast<const uint16_t*>(hv.raw());
        float* d = f.data<float>();
        for (int64_t k = 0; k < hv.numel(); ++k)
          d[k] = hv.dtype() == DType::kBFloat16 ? bfloat16_to_float(h[k]) : half_to_float(h[k]);
        hv = std::move(f);
      }
      sg.host_values[in] = std::move(hv);
    }
    launch.inputs.assign(step.inputs.size(), LayerTensor{});
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int in = step.inputs[i];
      if (in < 0) continue;
      LayerTensor& t = launch.inputs[i];
      t.present = true;
      t.shape = sg.shapes[in];
      t.dtype = store(in);
      t.host = sg.host_values[in].defined() ? &sg.host_values[in] : nullptr;
      t.data = ptrs_[in];
      // Float32 island (float32_island.h): of 16-bit model tensors (a layer made from a float32 view), and in 16-bit
      // engines of the float32 values stored in 16 bits: the layer reads a float32 copy in the pool. Not converted:
      // values the layer reads on the host (16-bit engines: its host inputs, whose host value is float32 already,
      // as in the static path; float32 engines: any value known on the host).
      const bool host_read = a16 != DType::kUndefined ? std::find(step.host_in.begin(), step.host_in.end(),
                                                                  static_cast<int>(i)) != step.host_in.end()
                                                      : t.host != nullptr;
      if (step.island && island_converts(sg.dtypes[in], t.dtype, step.island_view != nullptr) && !host_read) {
        void* f32 = sg.alloc(plan_.device_, shape_numel(t.shape) * sizeof(float));
        check_launch(
            kilnrt::cuda::kernels::f16_to_32(t.data, static_cast<float*>(f32), t.numel(), bf_of(t.dtype), stream),
            node.describe(), "f16_to_32");
        t.data = f32;
        t.dtype = DType::kFloat32;
      } else if (step.island && a16 != DType::kUndefined && island_converts(sg.dtypes[in], t.dtype, false)) {
        t.dtype = DType::kFloat32;  // read on the host: the float32 host value
      }
    }
    if (const auto* sl = dynamic_cast<const SequenceLayer*>(step.layer.get())) {
      // Sequence step (sequence_steps.h): edits host lists of device tensors; tensor data moves on `stream`.
      std::vector<const DeviceSequence*> seq_in(step.inputs.size(), nullptr);
      for (size_t i = 0; i < step.inputs.size(); ++i)
        if (step.inputs[i] >= 0 && sg.is_sequence[step.inputs[i]]) seq_in[i] = &sg.sequences[step.inputs[i]];
      launch.outputs.assign(step.outputs.size(), LayerOutput{});
      std::vector<DeviceSequence> seq_out;
      std::vector<Tensor> host_out;
      try {
        sl->run(launch, seq_in, seq_out, host_out, [&](size_t bytes) { return sg.alloc(plan_.device_, bytes); });
      } catch (const Error& e) {
        if (e.where().find(node.name) != std::string::npos) throw;
        throw e.with_context(node.describe());
      }
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const int os = step.outputs[o];
        if (os < 0) continue;
        if (!launch.outputs[o].present) {  // a sequence
          sg.sequences[os] = std::move(seq_out.at(o));
          sg.is_sequence[os] = 1;
          sg.dtypes[os] = sg.sequences[os].dtype;
          continue;
        }
        sg.shapes[os] = launch.outputs[o].shape;
        sg.dtypes[os] = launch.outputs[o].dtype;
        ptrs_[os] = launch.outputs[o].data;
        if (o < host_out.size() && host_out[o].defined()) {  // known on the host (SequenceLength): uploaded too
          sg.host_values[os] = host_out[o];
          const Tensor& hv = sg.host_values[os];
          ptrs_[os] = sg.alloc(plan_.device_, hv.nbytes());
          if (hv.nbytes() > 0)
            KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(ptrs_[os]), hv.raw(), hv.nbytes(), stream), node.describe());
        }
      }
      continue;
    }
    if (auto* cf = dynamic_cast<ControlFlowLayer*>(step.layer.get())) {
      // If / Loop / Scan (control_flow/control_flow_layers.cc): the layer runs its bodies, sizes its outputs and takes
      // their memory from the pool; its per-context state (body runners) is kept across runs.
      if (sg.control_flow.size() != plan_.steps_.size()) sg.control_flow.resize(plan_.steps_.size());
      launch.outputs.assign(step.outputs.size(), LayerOutput{});
      for (size_t o = 0; o < step.outputs.size(); ++o) launch.outputs[o].present = step.outputs[o] >= 0;
      const bool timed = profiler_ && profiler_->armed();
      if (timed) profiler_->begin(si, stream);
      try {
        // A node passing sequences (sequence_steps.h) runs through run_sequences(); any other through run().
        SequenceIo sio;
        bool with_sequences = step.sequences;
        for (size_t i = 0; i < step.inputs.size(); ++i) {
          const bool is_seq = step.inputs[i] >= 0 && sg.is_sequence[step.inputs[i]];
          sio.inputs.push_back(is_seq ? &sg.sequences[step.inputs[i]] : nullptr);
          with_sequences |= is_seq;
        }
        for (const std::string& out : node.outputs) {
          const ir::TensorType* t = out.empty() ? nullptr : g.type_of(out);
          sio.output_is_sequence.push_back(t && t->is_sequence ? 1 : 0);
          with_sequences |= t && t->is_sequence;
        }
        sio.outputs.resize(node.outputs.size());
        if (with_sequences)
          sg.syncs += cf->run_sequences(
              launch, [&](size_t bytes) { return sg.alloc(plan_.device_, bytes); }, sg.control_flow[si], sio);
        else
          sg.syncs += cf->run(
              launch, [&](size_t bytes) { return sg.alloc(plan_.device_, bytes); }, sg.control_flow[si]);
        for (size_t o = 0; o < step.outputs.size() && with_sequences; ++o) {
          if (step.outputs[o] < 0 || !sio.output_is_sequence[o]) continue;
          sg.sequences[step.outputs[o]] = std::move(sio.outputs[o]);
          sg.is_sequence[step.outputs[o]] = 1;
          launch.outputs[o].dtype = sg.sequences[step.outputs[o]].dtype;
          launch.outputs[o].shape = Shape{};
          launch.outputs[o].data = nullptr;
        }
      } catch (const Error& e) {
        if (e.where().find(node.name) != std::string::npos) throw;
        throw e.with_context(node.describe());
      }
      if (timed) profiler_->end(si, stream);
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const int os = step.outputs[o];
        if (os < 0) continue;
        ptrs_[os] = launch.outputs[o].data;
        sg.shapes[os] = launch.outputs[o].shape;
        sg.dtypes[os] = launch.outputs[o].dtype;
        if (store(os) != sg.dtypes[os]) {  // 16-bit engine: the float32 body result -> 16-bit storage
          ptrs_[os] = sg.alloc(plan_.device_, bytes_of(os));
          check_launch(kilnrt::cuda::kernels::f32_to_16(static_cast<const float*>(launch.outputs[o].data), ptrs_[os],
                                                        shape_numel(sg.shapes[os]), bf_of(store(os)), stream),
                       node.describe(), "f32_to_16");
        }
      }
      continue;
    }
    const auto* dd = step.data_dependent ? dynamic_cast<const DataDependentLayer*>(step.layer.get()) : nullptr;
    try {
      if (dd) {
        const std::vector<Shape> max = dd->max_output_shapes(launch.inputs);
        const std::vector<DType> types = dd->output_dtypes(launch.inputs);
        for (size_t o = 0; o < step.outputs.size(); ++o) {
          if (step.outputs[o] < 0) continue;
          sg.shapes[step.outputs[o]] = max.at(o);
          sg.dtypes[step.outputs[o]] = types.at(o);
        }
      } else {
        infer_device_step(step, sg.shapes, sg.dtypes, sg.host_values);
      }
    } catch (const Error& e) {
      if (e.where().find(node.name) != std::string::npos) throw;
      throw e.with_context(node.describe());
    }
    if (step.layer->is_alias()) {
      if (step.outputs[0] >= 0) ptrs_[step.outputs[0]] = const_cast<void*>(launch.inputs[0].data);
      continue;
    }
    launch.outputs.assign(step.outputs.size(), LayerOutput{});
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int os = step.outputs[o];
      if (os < 0) continue;
      ptrs_[os] = sg.alloc(plan_.device_, bytes_of(os));
      launch.outputs[o] = LayerOutput{ptrs_[os], store(os), sg.shapes[os], true};
      if (step.island && island_converts(sg.dtypes[os], store(os), step.island_view != nullptr))  // float32 scratch
        launch.outputs[o] = LayerOutput{sg.alloc(plan_.device_, shape_numel(sg.shapes[os]) * sizeof(float)),
                                        DType::kFloat32, sg.shapes[os], true};
    }
    const bool timed = profiler_ && profiler_->armed();
    if (timed) profiler_->begin(si, stream);
    try {
      step.layer->enqueue(launch);
    } catch (const Error& e) {
      if (e.where().find(node.name) != std::string::npos) throw;
      throw e.with_context(node.describe());
    }
    if (timed) profiler_->end(si, stream);
    for (size_t o = 0; step.island && o < step.outputs.size(); ++o) {
      const int os = step.outputs[o];
      if (os < 0 || !island_converts(sg.dtypes[os], store(os), step.island_view != nullptr)) continue;
      const LayerOutput& out = launch.outputs[o];  // a data-dependent layer wrote its counted shape there
      check_launch(kilnrt::cuda::kernels::f32_to_16(static_cast<const float*>(out.data), ptrs_[os], out.numel(),
                                                    bf_of(store(os)), stream),
                   node.describe(), "f32_to_16");
    }
    if (dd) {
      ++sg.syncs;  // the layer read its count on the host
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const int os = step.outputs[o];
        if (os < 0) continue;
        const Shape& got = launch.outputs[o].shape;
        KILNRT_CHECK(shape_numel(got) <= shape_numel(sg.shapes[os]), kInternal, node.describe(),
                     "output " << o << " of shape " << shape_to_string(got) << " exceeds its bound "
                               << shape_to_string(sg.shapes[os]));
        sg.shapes[os] = got;  // a view of the counted prefix
      }
    }
  }
  if (profiler_) profiler_->finish_run();
  sg.out_shapes.clear();
  for (size_t i = 0; i < plan_.output_slots_.size(); ++i) {
    const int s = plan_.output_slots_[i];
    sg.out_shapes.push_back(sg.shapes[s]);
    if (store(s) != sg.dtypes[s]) {  // 16-bit engine: 16-bit storage -> the float32 output (output_device_ptr)
      if (out32_.empty()) out32_.assign(plan_.output_slots_.size(), nullptr);
      out32_[i] = sg.alloc(plan_.device_, shape_numel(sg.shapes[s]) * sizeof(float));
      check_launch(kilnrt::cuda::kernels::f16_to_32(ptrs_[s], static_cast<float*>(out32_[i]), shape_numel(sg.shapes[s]),
                                                    bf_of(store(s)), stream),
                   plan_.slot_names_[s], "f16_to_32");
    }
    if (i >= outputs.size() || !outputs[i]) continue;
    const size_t bytes = shape_numel(sg.shapes[s]) * dtype_size(sg.dtypes[s]);
    if (bytes > 0 && outputs[i] != io_out(i))
      KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(outputs[i]), dptr(io_out(i)), bytes, stream),
                      "output '" + plan_.slot_names_[s] + "'");
  }
  sg.ran = true;
  arena_used_ = true;
  done_.record(stream);
  last_mode_ = Mode::kDirect;
  ++stats_.direct;
}

}  // namespace kilnrt::backends::cuda
