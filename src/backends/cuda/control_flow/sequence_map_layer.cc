// SequenceMap on CUDA engines (sequence_steps.h; docs/cuda-backend.md, "Sequences"): the body runs once per element
// of input_sequence as a nested CUDA plan (like If / Loop bodies, control_flow_layers.cc), on the caller's stream;
// its inputs are element i of each sequence input and the tensor inputs as they are, plus the outer-scope values it
// reads; each body output is copied into the run's pool and appended to the matching output sequence. The body runner
// reuses the parent context's workspace. A control-flow layer: the segmented runner calls run_sequences().
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/control_flow/control_flow_layer.h"
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/control_flow/sequence_steps.h"
#include "passes/shape_inference.h"

namespace kilnrt::backends::cuda {
namespace {

const ir::Graph& map_body_attr(const ir::Node& node) {
  auto it = node.attrs.find("body");
  KILNRT_CHECK(it != node.attrs.end() && it->second.kind == ir::Attribute::Kind::kGraph && it->second.g, kInvalidModel,
               node.describe(), "SequenceMap needs a graph attribute 'body'");
  return *it->second.g;
}

// The body as a graph of its own: its inputs (a missing dtype taken from the node's input: the element dtype of a
// sequence), then the outer-scope values it reads that are not constants of `outer` (`outer_inputs`: their index
// among ir::outer_scope_reads); outer constants copied in; shapes inferred.
std::unique_ptr<ir::Graph> map_body(const ir::Node& node, const ir::Graph& outer, std::vector<size_t>* outer_inputs) {
  auto g = std::make_unique<ir::Graph>(map_body_attr(node));
  if (g->name.empty()) g->name = "body";
  for (const auto& [domain, version] : outer.opsets) g->opsets.emplace(domain, version);
  KILNRT_CHECK(g->inputs.size() == node.inputs.size(), kInvalidModel, node.describe(),
               "SequenceMap body takes " << g->inputs.size() << " inputs, the node has " << node.inputs.size());
  for (size_t i = 0; i < g->inputs.size(); ++i) {
    ir::TensorType& t = g->types[g->inputs[i]];
    t.is_sequence = false;  // the body sees one element
    const ir::TensorType* n = outer.type_of(node.inputs[i]);
    if (t.dtype == DType::kUndefined && n) t.dtype = n->dtype;
    if (outer.is_constant(node.inputs[i]) && t.dtype == DType::kUndefined)
      t.dtype = outer.constants.at(node.inputs[i]).dtype();
  }
  const std::vector<std::string> free = ir::outer_scope_reads(node);
  add_outer_scope_values(outer, free, g.get(), outer_inputs);
  passes::infer_shapes(*g);
  return g;
}

struct MapState final : ControlFlowState {
  std::unique_ptr<CudaRunner> runner;
};

class SequenceMapLayer final : public ControlFlowLayer {
 public:
  explicit SequenceMapLayer(const LayerCreateArgs& a) : name_(a.node.describe()), n_in_(a.node.inputs.size()) {
    graph_ = map_body(a.node, a.graph, &outer_inputs_);
    KILNRT_CHECK(graph_->outputs.size() == a.node.outputs.size(), kInvalidModel, name_,
                 "SequenceMap body has " << graph_->outputs.size() << " outputs, the node " << a.node.outputs.size());
    try {
      plan_ = std::make_unique<CudaPlan>(*graph_, a.device);
    } catch (const Error& e) {
      throw e.with_context(name_ + " body");
    }
  }
  std::string tactic() const override { return "control-flow:sequence-map"; }
  uint64_t run(LayerLaunch&, const Alloc&, std::unique_ptr<ControlFlowState>&) override {
    KILNRT_THROW(kInternal, name_, "SequenceMap runs through run_sequences()");
  }
  uint64_t run_sequences(LayerLaunch& l, const Alloc& alloc, std::unique_ptr<ControlFlowState>& state,
                         SequenceIo& seq) override {
    if (!state) {
      auto st = std::make_unique<MapState>();
      st->runner = std::make_unique<CudaRunner>(*plan_);
      st->runner->set_graphs_enabled(false);
      state = std::move(st);
    }
    CudaRunner& r = *static_cast<MapState&>(*state).runner;
    const DeviceSequence* first = seq.inputs.empty() ? nullptr : seq.inputs[0];
    KILNRT_CHECK(first, kInvalidArgument, name_, "input 0 ('input_sequence') must be a sequence");
    const size_t len = first->items.size();
    for (size_t i = 1; i < n_in_; ++i)
      KILNRT_CHECK(
          !seq.inputs[i] || seq.inputs[i]->items.size() == len, kInvalidArgument, name_,
          "sequence input " << i << " has " << seq.inputs[i]->items.size() << " elements, input_sequence has " << len);
    for (size_t o = 0; o < seq.outputs.size(); ++o) {
      seq.output_is_sequence[o] = 1;
      const ir::TensorType* t = graph_->type_of(graph_->outputs[o]);
      seq.outputs[o] = DeviceSequence{};
      seq.outputs[o].dtype = t ? t->dtype : DType::kUndefined;
    }
    // Outer-scope sequences the body reads (its extra inputs).
    std::vector<const DeviceSequence*> body_seqs(n_in_, nullptr);
    for (size_t k : outer_inputs_) body_seqs.push_back(n_in_ + k < seq.inputs.size() ? seq.inputs[n_in_ + k] : nullptr);
    for (size_t e = 0; e < len; ++e) {
      std::vector<const void*> ins;
      std::vector<Shape> shapes;
      for (size_t i = 0; i < n_in_; ++i) {
        if (seq.inputs[i]) {
          const DeviceSequenceItem& it = seq.inputs[i]->items[e];
          ins.push_back(it.data);
          shapes.push_back(it.shape);
        } else {
          ins.push_back(l.inputs.at(i).data);
          shapes.push_back(l.inputs.at(i).shape);
        }
      }
      for (size_t k : outer_inputs_) {
        ins.push_back(l.inputs.at(n_in_ + k).data);
        shapes.push_back(l.inputs.at(n_in_ + k).shape);
      }
      try {
        if (l.workspace && l.workspace_bytes >= kWorkspaceBytes)
          r.use_external_workspace(l.workspace, l.workspace_bytes);
        r.set_sequence_inputs(body_seqs);
        r.prepare(shapes, l.stream);
        r.enqueue(ins, {}, l.stream);
        r.set_sequence_inputs({});
      } catch (const Error& e) {
        throw e.with_context(name_ + " body");
      }
      const std::vector<Shape> out_shapes = r.output_shapes();
      for (size_t o = 0; o < seq.outputs.size(); ++o) {
        KILNRT_CHECK(!r.sequence_output(o), kUnsupported, name_, "SequenceMap body outputs must be tensors");
        DeviceSequence one;
        one.dtype = seq.outputs[o].dtype;
        one.items.push_back(DeviceSequenceItem{r.output_device_ptr(o), one.dtype, out_shapes.at(o)});
        seq.outputs[o].items.push_back(copy_sequence(one, alloc, l.stream, name_).items.at(0));
      }
    }
    return 0;
  }

 private:
  std::string name_;
  size_t n_in_;
  std::unique_ptr<ir::Graph> graph_;
  std::vector<size_t> outer_inputs_;
  std::unique_ptr<CudaPlan> plan_;
};

std::string sequence_map_supported(const ir::Node& node, const ir::Graph& graph) {
  try {
    std::vector<size_t> outer_inputs;
    CudaPlan::check_supported(*map_body(node, graph, &outer_inputs));
  } catch (const Error& e) {
    return "body node " + e.where() + ": " + e.message();
  }
  return "";
}

// An executor-owned layer: the body is a nested plan of this executor, run per sequence element.
KILNRT_REGISTER_CUDA_LAYER({"SequenceMap"}, sequence_map_supported, [](const LayerCreateArgs& a) {
  return std::unique_ptr<CudaLayer>(std::make_unique<SequenceMapLayer>(a));
});

}  // namespace
}  // namespace kilnrt::backends::cuda
