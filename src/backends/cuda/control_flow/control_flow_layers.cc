// If, Loop and Scan on CUDA engines (control_flow_layer.h; docs/cuda-backend.md, "Control flow"). The driver runs
// on the host; each body runs as a nested CUDA plan (a CudaPlan of the body graph, built once when the engine
// loads, and one CudaRunner per execution context, CUDA graphs off) on the caller's stream over device memory.
// Outer-scope values a body reads arrive as extra inputs of the node (cuda_plan.cc) and become extra inputs of the
// body graph; outer constants are copied into it as constants. Host reads: If's condition, Loop's trip count and
// condition (one stream sync each when they are device values) and the body's condition output of every Loop
// iteration unless the body passes its condition through or makes it a constant. Scan needs none.
// Memory: loop-carried values and states ping-pong between two buffers per value, scan outputs are gathered per
// iteration in a growing buffer, all kept per context across runs (a buffer that grows mid-run is freed at the next
// run); the node's outputs are copied into the segmented runner's pool at the end. Body runners use the parent
// context's workspace (CudaRunner::use_external_workspace).
#include <algorithm>
#include <cstring>

#include "backends/cuda/control_flow/control_flow_layer.h"
#include "backends/cuda/plan_internal.h"
#include "backends/cuda/control_flow/sequence_steps.h"
#include "core/failure_injection.h"
#include "kilnrt/cuda/memory.h"
#include "passes/shape_inference.h"

namespace kilnrt::backends::cuda {

void add_outer_scope_values(const ir::Graph& outer, const std::vector<std::string>& free, ir::Graph* body,
                            std::vector<size_t>* outer_inputs) {
  for (size_t k = 0; k < free.size(); ++k) {
    const std::string& name = free[k];
    if (outer.is_constant(name)) {
      body->constants[name] = outer.constants.at(name);
      continue;
    }
    const ir::TensorType* t = outer.type_of(name);
    body->types[name] = t ? *t : ir::TensorType{};
    body->inputs.push_back(name);
    outer_inputs->push_back(k);
  }
}

namespace {

namespace kk = kilnrt::cuda::kernels;
using kilnrt::cuda::DeviceBuffer;
using plan_detail::dptr;

const ir::Graph& body_attr(const ir::Node& node, const std::string& attr) {
  auto it = node.attrs.find(attr);
  KILNRT_CHECK(it != node.attrs.end(), kInvalidModel, node.describe(), "missing graph attribute '" << attr << "'");
  KILNRT_CHECK(it->second.kind == ir::Attribute::Kind::kGraph && it->second.g, kInvalidModel, node.describe(),
               "attribute '" << attr << "' is not a graph");
  return *it->second.g;
}

DType dtype_in(const ir::Graph& g, const std::string& name) {
  if (g.is_constant(name)) return g.constants.at(name).dtype();
  const ir::TensorType* t = g.type_of(name);
  return t ? t->dtype : DType::kUndefined;
}

// The body as a graph of its own: its formal inputs (a missing dtype taken from `formal`), then the outer-scope
// values it reads that are not constants of `outer` (`outer_inputs`: their index in `free`); shapes inferred.
std::unique_ptr<ir::Graph> body_graph(const ir::Node& node, const std::string& attr, const ir::Graph& outer,
                                      const std::vector<std::string>& free, const std::vector<DType>& formal,
                                      std::vector<size_t>* outer_inputs) {
  auto g = std::make_unique<ir::Graph>(body_attr(node, attr));
  if (g->name.empty()) g->name = attr;
  for (const auto& [domain, version] : outer.opsets) g->opsets.emplace(domain, version);
  for (size_t i = 0; i < g->inputs.size() && i < formal.size(); ++i) {
    ir::TensorType& t = g->types[g->inputs[i]];
    if (t.dtype == DType::kUndefined) t.dtype = formal[i];
  }
  add_outer_scope_values(outer, free, g.get(), outer_inputs);
  passes::infer_shapes(*g);
  return g;
}

// A body with its nested CUDA plan (per engine).
struct Body {
  std::string attr;
  std::unique_ptr<ir::Graph> graph;
  std::vector<size_t> outer_inputs;  // per extra body input: index among the node's outer-scope values
  std::unique_ptr<CudaPlan> plan;
  DType out_dtype(size_t i) const { return dtype_in(*graph, graph->outputs.at(i)); }
};

Body make_body(const LayerCreateArgs& a, const std::string& attr, const std::vector<std::string>& free,
               const std::vector<DType>& formal) {
  Body b;
  b.attr = attr;
  b.graph = body_graph(a.node, attr, a.graph, free, formal, &b.outer_inputs);
  for (const std::string& in : b.graph->inputs)
    KILNRT_CHECK(dtype_in(*b.graph, in) != DType::kUndefined, kUnsupported, a.node.describe(),
                 attr << " input '" << in << "' has no known dtype");
  for (size_t i = 0; i < b.graph->outputs.size(); ++i)
    KILNRT_CHECK(b.out_dtype(i) != DType::kUndefined, kUnsupported, a.node.describe(),
                 attr << " output '" << b.graph->outputs[i] << "' has no known dtype");
  try {
    b.plan = std::make_unique<CudaPlan>(*b.graph, a.device);
  } catch (const Error& e) {
    throw e.with_context(a.node.describe() + " " + attr);
  }
  return b;
}

// Dtypes of a body's formal inputs from the node (bodies often leave them undeclared): Loop (iteration number,
// condition, carried values), Scan (states, scan slices; opset 8: after sequence_lens); none for If.
std::vector<DType> formal_dtypes(const ir::Node& node, const ir::Graph& graph, int64_t opset) {
  std::vector<DType> formal;
  if (node.op_type == "Loop") {
    formal = {DType::kInt64, DType::kBool};
    for (size_t i = 2; i < node.inputs.size(); ++i) formal.push_back(dtype_in(graph, node.inputs[i]));
  } else if (node.op_type == "Scan") {
    for (size_t i = opset < 9 ? 1 : 0; i < node.inputs.size(); ++i) formal.push_back(dtype_in(graph, node.inputs[i]));
  }
  return formal;
}

// supports(): every body placeable on the CUDA backend (no GPU needed).
std::string bodies_supported(const ir::Node& node, const ir::Graph& graph, const std::vector<std::string>& attrs) {
  const std::vector<std::string> free = ir::outer_scope_reads(node);
  const std::vector<DType> formal = formal_dtypes(node, graph, graph.opset(node.domain));
  for (const std::string& attr : attrs) {
    try {
      std::vector<size_t> outer_inputs;
      CudaPlan::check_supported(*body_graph(node, attr, graph, free, formal, &outer_inputs));
    } catch (const Error& e) {
      return attr + " body node " + e.where() + ": " + e.message();
    }
  }
  return "";
}

// Per-context state: one runner per body, buffers kept across runs.
class State final : public ControlFlowState {
 public:
  std::vector<std::unique_ptr<CudaRunner>> runners;
  std::vector<DeviceBuffer> buffers;
  std::vector<DeviceBuffer> retired;  // replaced mid-run (the stream may still read them): freed at the next run
  DeviceBuffer cond_true;             // Loop: the body's condition input (bool true)
  DeviceBuffer iota;                  // Loop: iteration numbers 0, 1, ... (int64), grown by doubling
  std::vector<int64_t> iota_host;     // its host source (kept: the upload is asynchronous)
  // Device pointer of iteration number `it` (no per-iteration upload once the buffer is long enough).
  const int64_t* iteration(int64_t it, int device, StreamT stream) {
    const size_t have = iota.size() / sizeof(int64_t);
    if (static_cast<size_t>(it) >= have) {
      const size_t n = std::max<size_t>({64, 2 * have, static_cast<size_t>(it) + 1});
      iota_host.resize(n);
      for (size_t i = 0; i < n; ++i) iota_host[i] = static_cast<int64_t>(i);
      DeviceBuffer bigger(device, n * sizeof(int64_t));
      kilnrt::cuda::ContextGuard guard(device);
      const auto& api = guard.api();
      KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(bigger.data()), iota_host.data(), n * sizeof(int64_t), stream),
                      "Loop iteration numbers");
      if (iota.data()) retired.push_back(std::move(iota));
      iota = std::move(bigger);
    }
    return static_cast<const int64_t*>(iota.data()) + it;
  }
  // Buffer `slot` of at least `bytes`; growing keeps its first `keep` bytes (copied on the stream).
  void* buffer(size_t slot, size_t bytes, size_t keep, int device, StreamT stream) {
    if (buffers.size() <= slot) buffers.resize(slot + 1);
    DeviceBuffer& b = buffers[slot];
    if (b.size() >= bytes && b.data()) return b.data();
    DeviceBuffer bigger(device, std::max<size_t>({bytes, 2 * b.size(), 256}));
    if (keep > 0 && b.data()) {
      kilnrt::cuda::ContextGuard guard(device);
      const auto& api = guard.api();
      KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(bigger.data()), dptr(b.data()), keep, stream), "control flow");
    }
    if (b.data()) retired.push_back(std::move(b));
    b = std::move(bigger);
    return b.data();
  }
};

State& state_of(std::unique_ptr<ControlFlowState>& s, const std::vector<const Body*>& bodies) {
  if (!s) {
    auto st = std::make_unique<State>();
    for (const Body* b : bodies) {
      st->runners.push_back(std::make_unique<CudaRunner>(*b->plan));
      st->runners.back()->set_graphs_enabled(false);
    }
    s = std::move(st);
  }
  State& st = static_cast<State&>(*s);
  st.retired.clear();  // the previous run of the plan has finished (the runner waited for it)
  return st;
}

// The body's outputs of one run: in the body runner's memory until its next run.
struct BodyOut {
  std::vector<Shape> shapes;
  std::vector<const void*> ptrs;
};

class ControlFlowBase : public ControlFlowLayer {
 protected:
  ControlFlowBase(const LayerCreateArgs& a)
      : node_(&a.node),
        name_(a.node.describe()),
        device_(a.device),
        n_in_(a.node.inputs.size()),
        free_(ir::outer_scope_reads(a.node)) {}

  // Runs `body` (runner `b` of the state) with `ins` / `shapes` (formal inputs) plus the outer-scope values.
  void run_body(State& st, size_t b, const Body& body, std::vector<const void*> ins, std::vector<Shape> shapes,
                const LayerLaunch& l, StreamT stream, BodyOut& out) const {
    for (size_t k : body.outer_inputs) {
      const LayerTensor& t = l.inputs.at(n_in_ + k);
      ins.push_back(t.data);
      shapes.push_back(t.shape);
    }
    CudaRunner& r = *st.runners.at(b);
    try {
      // The parent context's workspace: bodies run one at a time on its stream, and this layer uses none meanwhile.
      if (l.workspace && l.workspace_bytes >= kWorkspaceBytes) r.use_external_workspace(l.workspace, l.workspace_bytes);
      r.prepare(shapes, stream);
      r.enqueue(ins, {}, stream);
    } catch (const Error& e) {
      throw e.with_context(name_ + " " + body.attr);
    }
    out.shapes = r.output_shapes();
    out.ptrs.resize(out.shapes.size());
    for (size_t i = 0; i < out.shapes.size(); ++i) out.ptrs[i] = r.output_device_ptr(i);
  }

  // Sequences (sequence_steps.h): the body runner's sequence inputs, `formal` (per formal input, null: a tensor)
  // then the outer-scope sequences it reads (from `seq`, null: none).
  static std::vector<const DeviceSequence*> body_sequences(const Body& body, std::vector<const DeviceSequence*> formal,
                                                           const SequenceIo* seq, size_t n_in) {
    for (size_t k : body.outer_inputs)
      formal.push_back(seq && n_in + k < seq->inputs.size() ? seq->inputs[n_in + k] : nullptr);
    return formal;
  }

  // The host value of input i: its host copy when known, else read from the device (one stream sync).
  Tensor host_value(const LayerLaunch& l, size_t i, uint64_t& syncs) const {
    const LayerTensor& t = l.inputs.at(i);
    if (t.host) return *t.host;
    Tensor h = Tensor::empty(t.dtype, t.shape);
    if (h.nbytes() > 0) read_device(h, t.data, l.stream, syncs);
    return h;
  }
  void read_device(Tensor& h, const void* src, StreamT stream, uint64_t& syncs) const {
    kilnrt::cuda::ContextGuard guard(device_);
    const auto& api = guard.api();
    KILNRT_CU_CHECK(api, api.MemcpyDtoHAsync(h.raw(), dptr(src), h.nbytes(), stream), name_);
    KILNRT_CU_CHECK(api, api.StreamSynchronize(stream), name_ + " (sync point)");
    ++syncs;
  }
  bool truth(const Tensor& t, const char* what) const {
    KILNRT_CHECK(t.numel() == 1, kInvalidArgument, name_, what << " must hold one element, has " << t.numel());
    switch (t.dtype()) {
      case DType::kBool:
      case DType::kUInt8:
      case DType::kInt8: return t.data<uint8_t>()[0] != 0;
      case DType::kInt32: return t.data<int32_t>()[0] != 0;
      case DType::kInt64: return t.data<int64_t>()[0] != 0;
      case DType::kFloat32: return t.data<float>()[0] != 0.f;
      default: KILNRT_THROW(kInvalidArgument, name_, what << " has unsupported dtype " << dtype_name(t.dtype()));
    }
  }
  void copy(void* dst, const void* src, size_t bytes, StreamT stream) const {
    if (bytes == 0 || dst == src) return;
    kilnrt::cuda::ContextGuard guard(device_);
    const auto& api = guard.api();
    KILNRT_CU_CHECK(api, api.MemcpyDtoDAsync(dptr(dst), dptr(src), bytes, stream), name_);
  }
  // Sets output o (when present) to a copy of `src` in the pool.
  void emit(LayerLaunch& l, size_t o, DType dt, const Shape& shape, const void* src, const Alloc& alloc) const {
    if (o >= l.outputs.size() || !l.outputs[o].present) return;
    LayerOutput& y = l.outputs[o];
    y.dtype = dt;
    y.shape = shape;
    const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
    y.data = alloc(bytes);
    copy(y.data, src, bytes, l.stream);
  }
  void strided(void* dst, const void* src, const kk::Strided& s, DType dt, StreamT stream) const {
    const size_t es = dtype_size(dt);
    KILNRT_CHECK(es == 1 || es == 2 || es == 4 || es == 8, kUnsupported, name_,
                 "scan values of dtype " << dtype_name(dt) << " are not supported on CUDA");
    check_launch(kk::strided_copy(dst, src, s, es, stream), name_, "strided_copy");
  }

  const ir::Node* node_;  // owned by the engine's graph, which outlives the layer
  std::string name_;
  int device_;
  size_t n_in_;
  std::vector<std::string> free_;
};

// ---- If -------------------------------------------------------------------------------------------------------

class IfLayer final : public ControlFlowBase {
 public:
  explicit IfLayer(const LayerCreateArgs& a) : ControlFlowBase(a) {
    then_ = make_body(a, "then_branch", free_, {});
    else_ = make_body(a, "else_branch", free_, {});
    for (const Body* b : {&then_, &else_})
      KILNRT_CHECK(b->graph->outputs.size() == a.node.outputs.size(), kInvalidModel, name_,
                   b->attr << " has " << b->graph->outputs.size() << " outputs, the node " << a.node.outputs.size());
  }
  std::string tactic() const override { return "control-flow:if"; }
  uint64_t run(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state) override {
    State& st = state_of(state, {&then_, &else_});
    uint64_t syncs = 0;
    const bool cond = truth(host_value(l, 0, syncs), "If condition");
    const Body& body = cond ? then_ : else_;
    BodyOut out;
    run_body(st, cond ? 0 : 1, body, {}, {}, l, l.stream, out);
    for (size_t o = 0; o < out.shapes.size(); ++o) emit(l, o, body.out_dtype(o), out.shapes[o], out.ptrs[o], alloc);
    return syncs;
  }
  // If taking (outer-scope reads) or returning sequences: the branch's sequence outputs copied into the pool.
  uint64_t run_sequences(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state,
                         SequenceIo& seq) override {
    State& st = state_of(state, {&then_, &else_});
    uint64_t syncs = 0;
    const bool cond = truth(host_value(l, 0, syncs), "If condition");
    const Body& body = cond ? then_ : else_;
    CudaRunner& r = *st.runners.at(cond ? 0 : 1);
    r.set_sequence_inputs(body_sequences(body, {}, &seq, n_in_));
    BodyOut out;
    run_body(st, cond ? 0 : 1, body, {}, {}, l, l.stream, out);
    r.set_sequence_inputs({});
    for (size_t o = 0; o < out.shapes.size(); ++o) {
      const DeviceSequence* s = r.sequence_output(o);
      if (s && o < seq.outputs.size()) {
        seq.outputs[o] = copy_sequence(*s, alloc, l.stream, name_);
        seq.output_is_sequence[o] = 1;  // the branch decides (the node's output type may not say)
      } else {
        emit(l, o, body.out_dtype(o), out.shapes[o], out.ptrs[o], alloc);
      }
    }
    return syncs;
  }

 private:
  Body then_, else_;
};

// ---- Loop -----------------------------------------------------------------------------------------------------
// Inputs: M, cond, v_initial (N); body (iter_num, cond_in, v...) -> (cond_out, v..., scan_k...).

Shape scalar_shape(const ir::Graph& g, size_t input) {
  const ir::TensorType* t = input < g.inputs.size() ? g.type_of(g.inputs[input]) : nullptr;
  return (t && t->has_shape && t->shape.size() == 1) ? Shape{1} : Shape{};
}

// Part shape of a scan output when no iteration ran (the CPU backend's rule): the body's declared shape, else {0}.
Shape empty_part(const Body& b, size_t out) {
  const ir::TensorType* t = b.graph->type_of(b.graph->outputs.at(out));
  if (!t || !t->has_shape || !ir::sym_shape_known(t->shape)) return {0};
  return ir::sym_shape_to_shape(t->shape);
}

class LoopLayer final : public ControlFlowBase {
 public:
  explicit LoopLayer(const LayerCreateArgs& a) : ControlFlowBase(a) {
    n_carried_ = a.node.inputs.size() >= 2 ? a.node.inputs.size() - 2 : 0;
    body_ = make_body(a, "body", free_, formal_dtypes(a.node, a.graph, a.opset));
    const ir::Graph& g = *body_.graph;
    const size_t formal_in = g.inputs.size() - body_.outer_inputs.size();
    KILNRT_CHECK(formal_in == n_carried_ + 2, kInvalidModel, name_,
                 "Loop body takes " << formal_in << " inputs, expected " << n_carried_ + 2);
    KILNRT_CHECK(g.outputs.size() >= n_carried_ + 1, kInvalidModel, name_,
                 "Loop body has " << g.outputs.size() << " outputs, expected at least " << n_carried_ + 1);
    n_scan_ = g.outputs.size() - 1 - n_carried_;
    KILNRT_CHECK(a.node.outputs.size() <= n_carried_ + n_scan_, kInvalidModel, name_,
                 "Loop has " << a.node.outputs.size() << " outputs, the body gives " << n_carried_ + n_scan_);
    iter_shape_ = scalar_shape(g, 0);
    cond_shape_ = scalar_shape(g, 1);
    // The body's condition output without a host read: its condition input passed through (stays true), or a
    // constant.
    if (g.outputs[0] == g.inputs[1]) {
      cond_known_ = true;
      cond_value_ = true;
    } else if (g.is_constant(g.outputs[0])) {
      cond_known_ = true;
      cond_value_ = truth(g.constants.at(g.outputs[0]), "Loop body condition output");
    }
  }
  std::string tactic() const override { return "control-flow:loop"; }
  uint64_t run(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state) override {
    return run_impl(l, alloc, state, nullptr);
  }
  // Loop-carried sequences (and outer-scope sequences the body reads): each iteration's sequence outputs are copied
  // into the pool (the body runner reuses its memory at the next iteration).
  uint64_t run_sequences(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state,
                         SequenceIo& seq) override {
    return run_impl(l, alloc, state, &seq);
  }

 private:
  uint64_t run_impl(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state, SequenceIo* seq) {
    State& st = state_of(state, {&body_});
    uint64_t syncs = 0;
    const StreamT stream = l.stream;
    const bool has_max = l.inputs.at(0).present;
    int64_t max_trips = 0;
    if (has_max) {
      const Tensor m = host_value(l, 0, syncs);
      KILNRT_CHECK(m.numel() == 1, kInvalidArgument, name_, "Loop M must hold one element");
      max_trips = ops::tensor_to_int64s(m)[0];
    }
    bool cond = l.inputs.at(1).present ? truth(host_value(l, 1, syncs), "Loop cond") : true;
    std::vector<const void*> cur(n_carried_);
    std::vector<Shape> cur_shape(n_carried_);
    std::vector<DType> cur_dtype(n_carried_);
    for (size_t i = 0; i < n_carried_; ++i) {
      const LayerTensor& t = l.inputs.at(2 + i);
      KILNRT_CHECK(t.present, kInvalidModel, name_, "loop-carried input " << i << " is omitted");
      cur[i] = t.data;
      cur_shape[i] = t.shape;
      cur_dtype[i] = t.dtype;
    }
    // Loop-carried sequences (run_sequences): cur_seq[i] set, cur[i] unused.
    std::vector<DeviceSequence> cur_seq(seq ? n_carried_ : 0);
    std::vector<uint8_t> is_seq(n_carried_, 0);
    for (size_t i = 0; seq && i < n_carried_; ++i) {
      const DeviceSequence* s = 2 + i < seq->inputs.size() ? seq->inputs[2 + i] : nullptr;
      if (s) cur_seq[i] = *s;
      is_seq[i] = s ? 1 : 0;
      if (s && i < seq->output_is_sequence.size()) seq->output_is_sequence[i] = 1;  // the initial value decides
    }
    if (!st.cond_true) {
      st.cond_true = DeviceBuffer(device_, 256);
      kilnrt::cuda::ContextGuard guard(device_);
      const auto& api = guard.api();
      KILNRT_CU_CHECK(api, api.MemsetD8Async(dptr(st.cond_true.data()), 1, 1, stream), name_);  // cond_in: true
    }
    std::vector<Shape> part(n_scan_);
    std::vector<size_t> part_bytes(n_scan_, 0);
    const int64_t iteration_limit = failure_injection::loop_iteration_limit();  // 0 (none) outside fuzzing
    int64_t it = 0;
    BodyOut out;
    Tensor cond_host;
    for (; (!has_max || it < max_trips) && cond; ++it) {
      KILNRT_CHECK(iteration_limit == 0 || it < iteration_limit, kInvalidArgument, name_,
                   "Loop exceeded " << iteration_limit << " iterations (limit set by failure_injection)");
      std::vector<const void*> ins{st.iteration(it, device_, stream), st.cond_true.data()};
      std::vector<Shape> shapes{iter_shape_, cond_shape_};
      ins.insert(ins.end(), cur.begin(), cur.end());
      shapes.insert(shapes.end(), cur_shape.begin(), cur_shape.end());
      if (seq) {
        std::vector<const DeviceSequence*> formal(2 + n_carried_, nullptr);
        for (size_t i = 0; i < n_carried_; ++i) formal[2 + i] = is_seq[i] ? &cur_seq[i] : nullptr;
        st.runners.at(0)->set_sequence_inputs(body_sequences(body_, std::move(formal), seq, n_in_));
      }
      run_body(st, 0, body_, std::move(ins), std::move(shapes), l, stream, out);
      if (seq) st.runners.at(0)->set_sequence_inputs({});
      if (cond_known_) {
        cond = cond_value_;
      } else {
        const DType cdt = body_.out_dtype(0);
        if (!cond_host.defined() || cond_host.dtype() != cdt || cond_host.shape() != out.shapes[0])
          cond_host = Tensor::empty(cdt, out.shapes[0]);
        if (cond_host.nbytes() > 0) read_device(cond_host, out.ptrs[0], stream, syncs);
        cond = truth(cond_host, "Loop body condition output");
      }
      // Carried values: ping-pong between buffer sets (it % 2): the body read the other set.
      for (size_t i = 0; i < n_carried_; ++i) {
        if (seq && is_seq[i]) {
          const DeviceSequence* s = st.runners.at(0)->sequence_output(1 + i);
          KILNRT_CHECK(s, kInvalidModel, name_, "Loop body output " << 1 + i << " is not a sequence");
          cur_seq[i] = copy_sequence(*s, alloc, stream, name_);
          continue;
        }
        const Shape& s = out.shapes[1 + i];
        const size_t bytes = static_cast<size_t>(shape_numel(s)) * dtype_size(cur_dtype[i]);
        void* dst = st.buffer((it % 2) * n_carried_ + i, bytes, 0, device_, stream);
        copy(dst, out.ptrs[1 + i], bytes, stream);
        cur[i] = dst;
        cur_shape[i] = s;
      }
      for (size_t k = 0; k < n_scan_; ++k) {
        const Shape& s = out.shapes[1 + n_carried_ + k];
        if (it == 0) {
          part[k] = s;
          part_bytes[k] = static_cast<size_t>(shape_numel(s)) * dtype_size(body_.out_dtype(1 + n_carried_ + k));
        }
        KILNRT_CHECK(s == part[k], kInvalidArgument, name_,
                     "scan output changes shape between iterations (" << shape_to_string(part[k]) << " vs "
                                                                      << shape_to_string(s) << ")");
        const size_t off = static_cast<size_t>(it) * part_bytes[k];
        char* dst = static_cast<char*>(st.buffer(2 * n_carried_ + k, off + part_bytes[k], off, device_, stream));
        copy(dst + off, out.ptrs[1 + n_carried_ + k], part_bytes[k], stream);
      }
    }
    for (size_t i = 0; i < n_carried_; ++i) {
      if (seq && is_seq[i]) {
        if (i < seq->outputs.size()) seq->outputs[i] = std::move(cur_seq[i]);
        continue;
      }
      emit(l, i, cur_dtype[i], cur_shape[i], cur[i], alloc);
    }
    for (size_t k = 0; k < n_scan_; ++k) {
      const size_t o = n_carried_ + k;
      Shape s = it > 0 ? part[k] : empty_part(body_, 1 + o);
      s.insert(s.begin(), it);
      const void* src = it > 0 ? st.buffers.at(2 * n_carried_ + k).data() : nullptr;
      emit(l, o, body_.out_dtype(1 + o), s, src, alloc);
    }
    return syncs;
  }

  Body body_;
  size_t n_carried_ = 0, n_scan_ = 0;
  Shape iter_shape_, cond_shape_;
  bool cond_known_ = false, cond_value_ = true;
};

// ---- Scan -----------------------------------------------------------------------------------------------------

// One scan over device values: scan inputs sliced along their axes, states carried, scan outputs gathered in
// iteration order ([len][part]) in the state's buffers.
struct ScanRun {
  std::vector<const void*> states;  // final states
  std::vector<Shape> state_shapes;
  std::vector<DType> state_dtypes;
  std::vector<const void*> gathered;  // per scan output: [len][part] (null when len == 0)
  std::vector<Shape> parts;
  int64_t len = 0;
};

class ScanLayer final : public ControlFlowBase {
 public:
  ScanLayer(const LayerCreateArgs& a) : ControlFlowBase(a), opset8_(a.opset < 9) {
    const ir::Node& node = a.node;
    const size_t first = opset8_ ? 1 : 0;  // Scan-8: input 0 is sequence_lens
    KILNRT_CHECK(node.inputs.size() > first, kInvalidModel, name_, "Scan needs inputs");
    const size_t n_in = node.inputs.size() - first;
    const int64_t m = node.attr_int("num_scan_inputs");
    KILNRT_CHECK(m >= 1 && static_cast<size_t>(m) <= n_in, kInvalidModel, name_,
                 "num_scan_inputs " << m << " out of range for " << n_in << " inputs");
    n_scan_in_ = static_cast<size_t>(m);
    n_states_ = n_in - n_scan_in_;
    KILNRT_CHECK(node.outputs.size() >= n_states_, kInvalidModel, name_, "Scan has fewer outputs than states");
    n_scan_out_ = node.outputs.size() - n_states_;
    if (opset8_) {
      in_dirs_ = node.attr_ints("directions", std::vector<int64_t>(n_scan_in_, 0));
      in_axes_.assign(n_scan_in_, 0);
      out_axes_.assign(n_scan_out_, 0);
      out_dirs_.assign(n_scan_out_, 0);
    } else {
      in_axes_ = node.attr_ints("scan_input_axes", std::vector<int64_t>(n_scan_in_, 0));
      in_dirs_ = node.attr_ints("scan_input_directions", std::vector<int64_t>(n_scan_in_, 0));
      out_axes_ = node.attr_ints("scan_output_axes", std::vector<int64_t>(n_scan_out_, 0));
      out_dirs_ = node.attr_ints("scan_output_directions", std::vector<int64_t>(n_scan_out_, 0));
    }
    KILNRT_CHECK(in_axes_.size() == n_scan_in_ && in_dirs_.size() == n_scan_in_ && out_axes_.size() == n_scan_out_ &&
                     out_dirs_.size() == n_scan_out_,
                 kInvalidModel, name_, "scan_*_axes / scan_*_directions have the wrong length");
    body_ = make_body(a, "body", free_, formal_dtypes(node, a.graph, a.opset));
    const ir::Graph& g = *body_.graph;
    const size_t formal_in = g.inputs.size() - body_.outer_inputs.size();
    KILNRT_CHECK(formal_in == n_states_ + n_scan_in_ && g.outputs.size() == n_states_ + n_scan_out_, kInvalidModel,
                 name_,
                 "Scan body signature (" << formal_in << " -> " << g.outputs.size() << ") does not match the node");
  }
  std::string tactic() const override { return "control-flow:scan"; }

  uint64_t run(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state) override {
    State& st = state_of(state, {&body_});
    return opset8_ ? run8(st, l, alloc) : run9(st, l, alloc);
  }

 private:
  uint64_t run9(State& st, LayerLaunch& l, const Alloc& alloc) {
    std::vector<const void*> states, xs;
    std::vector<Shape> state_shapes, x_shapes;
    std::vector<DType> state_dtypes, x_dtypes;
    for (size_t i = 0; i < n_states_; ++i) {
      states.push_back(l.inputs.at(i).data);
      state_shapes.push_back(l.inputs[i].shape);
      state_dtypes.push_back(l.inputs[i].dtype);
    }
    for (size_t j = 0; j < n_scan_in_; ++j) {
      const LayerTensor& x = l.inputs.at(n_states_ + j);
      xs.push_back(x.data);
      x_shapes.push_back(x.shape);
      x_dtypes.push_back(x.dtype);
    }
    const ScanRun r = scan(st, l, states, state_shapes, state_dtypes, xs, x_shapes, x_dtypes, in_axes_);
    for (size_t i = 0; i < n_states_; ++i) emit(l, i, r.state_dtypes[i], r.state_shapes[i], r.states[i], alloc);
    for (size_t k = 0; k < n_scan_out_; ++k) {
      const size_t o = n_states_ + k;
      if (o >= l.outputs.size() || !l.outputs[o].present) continue;
      const Shape part = r.len > 0 ? r.parts[k] : empty_part(body_, o);
      const int64_t axis = ops::normalize_axis(out_axes_[k], static_cast<int64_t>(part.size()) + 1, *node_);
      Shape s = part;
      s.insert(s.begin() + axis, r.len);
      LayerOutput& y = l.outputs[o];
      y.dtype = body_.out_dtype(o);
      y.shape = s;
      y.data = alloc(static_cast<size_t>(shape_numel(s)) * dtype_size(y.dtype));
      place(y.data, r.gathered[k], part, axis, out_dirs_[k] != 0, r.len, y.dtype, l.stream);
    }
    return 0;
  }

  // Scan-8: a leading batch axis on every input and output (scan axis 1): one scan per batch entry.
  uint64_t run8(State& st, LayerLaunch& l, const Alloc& alloc) {
    uint64_t syncs = 0;
    const LayerTensor& first = l.inputs.at(1);
    KILNRT_CHECK(first.shape.size() >= 1, kInvalidArgument, name_, "Scan-8 inputs need a batch axis");
    const int64_t batch = first.shape[0];
    if (l.inputs.at(0).present) {
      const LayerTensor& x0 = l.inputs.at(1 + n_states_);
      for (int64_t len : ops::tensor_to_int64s(host_value(l, 0, syncs)))
        KILNRT_CHECK(x0.shape.size() >= 2 && len == x0.shape[1], kUnsupported, name_,
                     "sequence_lens shorter than the scan axis are not supported");
    }
    auto entry = [&](const LayerTensor& t, int64_t b, Shape* shape) {
      KILNRT_CHECK(!t.shape.empty() && t.shape[0] == batch, kInvalidArgument, name_,
                   "Scan-8 inputs must share the batch size " << batch);
      *shape = Shape(t.shape.begin() + 1, t.shape.end());
      return static_cast<const char*>(t.data) + b * shape_numel(*shape) * dtype_size(t.dtype);
    };
    const size_t n_out = n_states_ + n_scan_out_;
    std::vector<Shape> out_shape(n_out);
    std::vector<size_t> out_bytes(n_out, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<const void*> states, xs;
      std::vector<Shape> state_shapes(n_states_), x_shapes(n_scan_in_);
      std::vector<DType> state_dtypes, x_dtypes;
      for (size_t i = 0; i < n_states_; ++i) {
        states.push_back(entry(l.inputs.at(1 + i), b, &state_shapes[i]));
        state_dtypes.push_back(l.inputs[1 + i].dtype);
      }
      for (size_t j = 0; j < n_scan_in_; ++j) {
        xs.push_back(entry(l.inputs.at(1 + n_states_ + j), b, &x_shapes[j]));
        x_dtypes.push_back(l.inputs[1 + n_states_ + j].dtype);
      }
      const ScanRun r = scan(st, l, states, state_shapes, state_dtypes, xs, x_shapes, x_dtypes, in_axes_);
      for (size_t o = 0; o < n_out; ++o) {
        Shape s = o < n_states_ ? r.state_shapes[o] : r.parts[o - n_states_];
        if (o >= n_states_) s.insert(s.begin(), r.len);
        const DType dt = o < n_states_ ? r.state_dtypes[o] : body_.out_dtype(o);
        const size_t bytes = static_cast<size_t>(shape_numel(s)) * dtype_size(dt);
        const bool present = o < l.outputs.size() && l.outputs[o].present;
        if (b == 0) {
          out_shape[o] = s;
          out_bytes[o] = bytes;
          if (present) {
            Shape full = s;
            full.insert(full.begin(), batch);
            l.outputs[o] = LayerOutput{alloc(bytes * static_cast<size_t>(batch)), dt, full, true};
          }
        }
        KILNRT_CHECK(s == out_shape[o], kInvalidArgument, name_,
                     "Scan-8 output " << o << " changes shape between batch entries");
        if (!present) continue;
        char* dst = static_cast<char*>(l.outputs[o].data) + b * bytes;
        if (o < n_states_)
          copy(dst, r.states[o], bytes, l.stream);
        else
          place(dst, r.gathered[o - n_states_], r.parts[o - n_states_], 0, false, r.len, dt, l.stream);
      }
    }
    if (batch == 0)
      for (size_t o = 0; o < n_out && o < l.outputs.size(); ++o)
        if (l.outputs[o].present) l.outputs[o] = LayerOutput{alloc(0), body_.out_dtype(o), Shape{0, 0}, true};
    return syncs;
  }

  ScanRun scan(State& st, const LayerLaunch& l, std::vector<const void*> states, std::vector<Shape> state_shapes,
               const std::vector<DType>& state_dtypes, const std::vector<const void*>& xs,
               const std::vector<Shape>& x_shapes, const std::vector<DType>& x_dtypes,
               const std::vector<int64_t>& axes_attr) const {
    const StreamT stream = l.stream;
    ScanRun r;
    r.len = -1;
    std::vector<int64_t> axes(n_scan_in_), outer(n_scan_in_), inner(n_scan_in_);
    std::vector<Shape> slice_shape(n_scan_in_);
    for (size_t j = 0; j < n_scan_in_; ++j) {
      const Shape& s = x_shapes[j];
      axes[j] = ops::normalize_axis(axes_attr[j], static_cast<int64_t>(s.size()), *node_);
      const int64_t len = s[axes[j]];
      KILNRT_CHECK(r.len < 0 || len == r.len, kInvalidArgument, name_,
                   "scan inputs have different sequence lengths (" << r.len << " vs " << len << ")");
      r.len = len;
      outer[j] = 1;
      inner[j] = 1;
      for (int64_t d = 0; d < axes[j]; ++d) outer[j] *= s[d];
      for (size_t d = axes[j] + 1; d < s.size(); ++d) inner[j] *= s[d];
      slice_shape[j] = s;
      slice_shape[j].erase(slice_shape[j].begin() + axes[j]);
    }
    r.len = std::max<int64_t>(r.len, 0);
    // Buffer slots: states ping-pong [0, 2N), slices [2N, 2N+M), gathered scan outputs [2N+M, ...).
    const size_t slice0 = 2 * n_states_, gather0 = slice0 + n_scan_in_;
    r.parts.assign(n_scan_out_, Shape{});
    std::vector<size_t> part_bytes(n_scan_out_, 0);
    BodyOut out;
    for (int64_t t = 0; t < r.len; ++t) {
      std::vector<const void*> ins = states;
      std::vector<Shape> shapes = state_shapes;
      for (size_t j = 0; j < n_scan_in_; ++j) {
        const int64_t index = in_dirs_[j] ? r.len - 1 - t : t;
        const size_t es = dtype_size(x_dtypes[j]);
        const char* x = static_cast<const char*>(xs[j]);
        if (outer[j] == 1) {
          ins.push_back(x + index * inner[j] * static_cast<int64_t>(es));  // contiguous slice: no copy
        } else {
          void* dst = st.buffer(slice0 + j, static_cast<size_t>(outer[j] * inner[j]) * es, 0, device_, stream);
          kk::Strided s;
          s.rank = 2;
          s.dims[0] = outer[j];
          s.dims[1] = inner[j];
          s.in_strides[0] = r.len * inner[j];
          s.in_strides[1] = 1;
          s.in_offset = index * inner[j];
          s.out_strides[0] = inner[j];
          s.out_strides[1] = 1;
          if (outer[j] * inner[j] > 0) strided(dst, x, s, x_dtypes[j], stream);
          ins.push_back(dst);
        }
        shapes.push_back(slice_shape[j]);
      }
      run_body(st, 0, body_, std::move(ins), std::move(shapes), l, stream, out);
      for (size_t i = 0; i < n_states_; ++i) {
        const size_t bytes = static_cast<size_t>(shape_numel(out.shapes[i])) * dtype_size(state_dtypes[i]);
        void* dst = st.buffer((t % 2) * n_states_ + i, bytes, 0, device_, stream);
        copy(dst, out.ptrs[i], bytes, stream);
        states[i] = dst;
        state_shapes[i] = out.shapes[i];
      }
      for (size_t k = 0; k < n_scan_out_; ++k) {
        const Shape& s = out.shapes[n_states_ + k];
        if (t == 0) {
          r.parts[k] = s;
          part_bytes[k] = static_cast<size_t>(shape_numel(s)) * dtype_size(body_.out_dtype(n_states_ + k));
        }
        KILNRT_CHECK(s == r.parts[k], kInvalidArgument, name_,
                     "scan output changes shape between iterations (" << shape_to_string(r.parts[k]) << " vs "
                                                                      << shape_to_string(s) << ")");
        const size_t off = static_cast<size_t>(t) * part_bytes[k];
        // Sized for every iteration up front: the buffer never grows (nor copies) mid-scan.
        char* dst = static_cast<char*>(
            st.buffer(gather0 + k, static_cast<size_t>(r.len) * part_bytes[k], off, device_, stream));
        copy(dst + off, out.ptrs[n_states_ + k], part_bytes[k], stream);
      }
    }
    r.states = states;
    r.state_shapes = state_shapes;
    r.state_dtypes = state_dtypes;
    for (size_t k = 0; k < n_scan_out_; ++k)
      r.gathered.push_back(r.len > 0 ? st.buffers.at(gather0 + k).data() : nullptr);
    return r;
  }

  // Gathered [len][part] -> dst with the scan axis at `axis` of the output (reversed when `reverse`).
  void place(void* dst, const void* gathered, const Shape& part, int64_t axis, bool reverse, int64_t len, DType dt,
             StreamT stream) const {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= part[d];
    for (size_t d = axis; d < part.size(); ++d) inner *= part[d];
    if (len == 0 || outer * inner == 0) return;
    if (axis == 0 && !reverse) return copy(dst, gathered, static_cast<size_t>(len * inner) * dtype_size(dt), stream);
    kk::Strided s;
    s.rank = 3;
    s.dims[0] = len;
    s.dims[1] = outer;
    s.dims[2] = inner;
    s.in_strides[0] = outer * inner;
    s.in_strides[1] = inner;
    s.in_strides[2] = 1;
    s.out_strides[0] = reverse ? -inner : inner;
    s.out_strides[1] = len * inner;
    s.out_strides[2] = 1;
    s.out_offset = reverse ? (len - 1) * inner : 0;
    strided(dst, gathered, s, dt, stream);
  }

  bool opset8_;
  size_t n_states_ = 0, n_scan_in_ = 0, n_scan_out_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
  Body body_;
};

// Executor-owned layers: their bodies are nested plans of this executor.
KILNRT_REGISTER_CUDA_LAYER(
    {"If"},
    [](const ir::Node& n, const ir::Graph& g) {
      return bodies_supported(n, g, {"then_branch", "else_branch"});
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<IfLayer>(a); });
KILNRT_REGISTER_CUDA_LAYER(
    {"Loop"}, [](const ir::Node& n, const ir::Graph& g) { return bodies_supported(n, g, {"body"}); },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<LoopLayer>(a); });
KILNRT_REGISTER_CUDA_LAYER(
    {"Scan"}, [](const ir::Node& n, const ir::Graph& g) { return bodies_supported(n, g, {"body"}); },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<ScanLayer>(a); });

}  // namespace
}  // namespace kilnrt::backends::cuda
