#include "backends/cpu/cpu_executor.h"

#include <new>
#include <unordered_set>

#include "core/check.h"
#include "ops/sequence/sequence_support.h"

namespace kilnrt::backends::cpu {

std::vector<std::string> subgraph_free_values(const ir::Node& node) { return ir::outer_scope_reads(node); }

CpuPlan::CpuPlan(const ir::Graph& graph) : CpuPlan(graph, {}) {}

namespace {
// Ops that accept sequence inputs: the sequence ops, Identity, and nodes with bodies (If/Loop/Scan/SequenceMap pass
// sequences in and out of them).
bool takes_sequences(const ir::Node& node) {
  if (ops::is_sequence_op(node.op_type) || node.op_type == "Identity") return true;
  for (const auto& kv : node.attrs)
    if (kv.second.kind == ir::Attribute::Kind::kGraph) return true;
  return false;
}

void add_timing(CpuProfile* profile, size_t step, std::chrono::steady_clock::time_point start,
                std::chrono::steady_clock::time_point end) {
  using Ms = std::chrono::duration<double, std::milli>;
  LayerTiming& t = profile->layers[step];
  const double ms = Ms(end - start).count();
  t.start_ms.push_back(Ms(start - profile->origin).count());
  t.duration_ms.push_back(ms);
  ++t.calls;
  t.total_ms += ms;
  t.mean_ms = t.total_ms / static_cast<double>(t.calls);
}
}  // namespace

CpuPlan::CpuPlan(const ir::Graph& graph, const std::vector<std::string>& outer_values) : graph_(graph) {
  auto slot = [&](const std::string& name) {
    auto it = slot_of_.find(name);
    if (it != slot_of_.end()) return it->second;
    slot_of_[name] = num_slots_;
    return num_slots_++;
  };
  for (const std::string& in : graph.inputs) input_slots_.emplace_back(in, slot(in));
  for (const std::string& v : outer_values)
    if (!slot_of_.count(v)) input_slots_.emplace_back(v, slot(v));
  for (const auto& [name, t] : graph.constants) constant_slots_.emplace_back(slot(name), &t);
  const auto& registry = ops::OpRegistry::instance();
  for (const ir::Node& node : graph.nodes) {
    Step s{&node, nullptr, graph.opset(node.domain), {}, {}, {}};
    s.schema = &registry.get(node, s.opset);
    KILNRT_CHECK(static_cast<bool>(s.schema->cpu), kUnsupported, node.describe(),
                 "op " << node.op_type << " has no CPU kernel");
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        s.inputs.push_back(-1);
        continue;
      }
      KILNRT_CHECK(slot_of_.count(in), kInvalidModel, node.describe(), "input '" << in << "' is never produced");
      s.inputs.push_back(slot_of_.at(in));
    }
    // Outer-scope values read by the node's subgraphs: extra inputs after the node's own (see subgraph_free_values).
    for (const std::string& in : subgraph_free_values(node)) {
      KILNRT_CHECK(slot_of_.count(in), kInvalidModel, node.describe(),
                   "subgraph reads outer-scope value '" << in << "', which is never produced before it");
      s.inputs.push_back(slot_of_.at(in));
    }
    for (const std::string& out : node.outputs) s.outputs.push_back(out.empty() ? -1 : slot(out));
    steps_.push_back(std::move(s));
  }
  for (const std::string& out : graph.outputs) {
    KILNRT_CHECK(slot_of_.count(out), kInvalidModel, out, "graph output '" << out << "' is never produced");
    output_slots_.emplace_back(out, slot_of_.at(out));
  }
  // Last use of each intermediate slot (graph inputs, constants and outputs are never released early).
  std::unordered_set<int> pinned;
  for (auto& p : input_slots_) pinned.insert(p.second);
  for (auto& p : constant_slots_) pinned.insert(p.first);
  for (auto& p : output_slots_) pinned.insert(p.second);
  std::vector<int> last_use(num_slots_, -1);
  for (size_t i = 0; i < steps_.size(); ++i) {
    for (int in : steps_[i].inputs)
      if (in >= 0) last_use[in] = static_cast<int>(i);
    for (int out : steps_[i].outputs)
      if (out >= 0 && last_use[out] < 0) last_use[out] = static_cast<int>(i);
  }
  for (int s = 0; s < num_slots_; ++s)
    if (last_use[s] >= 0 && !pinned.count(s)) steps_[last_use[s]].release.push_back(s);
}

std::map<std::string, Tensor> CpuPlan::run(const std::map<std::string, Tensor>& inputs, CpuProfile* profile) const {
  std::map<std::string, PlanValue> in;
  for (const auto& [name, t] : inputs) in[name].tensor = t;
  std::map<std::string, PlanValue> values = run_values(in, profile);
  std::map<std::string, Tensor> out;
  for (auto& [name, v] : values) {
    KILNRT_CHECK(!v.is_sequence(), kUnsupported, name,
                 "graph output '" << name << "' is a sequence: not supported as engine I/O");
    out[name] = std::move(v.tensor);
  }
  return out;
}

std::map<std::string, PlanValue> CpuPlan::run_values(const std::map<std::string, PlanValue>& inputs,
                                                     CpuProfile* profile) const {
  using Clock = std::chrono::steady_clock;
  if (profile) {
    if (!profile->has_origin) {
      profile->origin = Clock::now();
      profile->has_origin = true;
    }
    if (profile->layers.size() != steps_.size()) {
      profile->layers.assign(steps_.size(), LayerTiming{});
      for (size_t i = 0; i < steps_.size(); ++i) {
        profile->layers[i].name = steps_[i].node->name;
        profile->layers[i].op_type = steps_[i].node->op_type;
      }
    }
  }
  std::vector<Tensor> slots(num_slots_);
  std::vector<std::shared_ptr<const ops::TensorSequence>> seqs(num_slots_);  // set for sequence values
  for (const auto& [name, s] : input_slots_) {
    auto it = inputs.find(name);
    KILNRT_CHECK(it != inputs.end(), kInvalidArgument, name, "missing input '" << name << "'");
    slots[s] = it->second.tensor;
    seqs[s] = it->second.sequence;
  }
  for (const auto& [s, t] : constant_slots_) slots[s] = *t;
  for (size_t si = 0; si < steps_.size(); ++si) {
    const Step& step = steps_[si];
    ops::CpuContext ctx{*step.node, step.opset, {}, {}};
    ctx.inputs.reserve(step.inputs.size());
    for (int in : step.inputs) ctx.inputs.push_back(in >= 0 ? &slots[in] : nullptr);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0 || !seqs[step.inputs[i]]) continue;
      KILNRT_CHECK(takes_sequences(*step.node), kInvalidArgument, step.node->describe(),
                   "input '" << (i < step.node->inputs.size() ? step.node->inputs[i] : "outer scope")
                             << "' is a sequence; " << step.node->op_type << " takes tensors");
      ctx.seq_inputs.resize(step.inputs.size(), nullptr);
      ctx.seq_inputs[i] = seqs[step.inputs[i]].get();
    }
    ctx.outputs.resize(step.outputs.size());
    const Clock::time_point start = profile ? Clock::now() : Clock::time_point{};
    try {
      if (step.node->op_type == "Identity" && ctx.has_sequence_input(0))
        ctx.set_sequence_output(0, *ctx.seq_inputs[0]);  // Identity of a sequence (opset 14+)
      else
        step.schema->cpu(ctx);
    } catch (const Error& e) {
      if (e.where().find(step.node->name) != std::string::npos) throw;
      throw e.with_context(step.node->describe());
    } catch (const std::bad_alloc&) {
      KILNRT_THROW(kOutOfMemory, step.node->describe(),
                   "out of host memory in the CPU kernel of " << step.node->op_type);
    } catch (const std::exception& e) {  // a kernel bug must still surface as a kilnrt::Error naming the node
      KILNRT_THROW(kInternal, step.node->describe(),
                   "the CPU kernel of " << step.node->op_type << " failed: " << e.what());
    }
    if (profile) add_timing(profile, si, start, Clock::now());
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (i < ctx.seq_outputs.size() && ctx.seq_outputs[i]) {
        seqs[step.outputs[i]] = std::make_shared<const ops::TensorSequence>(std::move(*ctx.seq_outputs[i]));
        slots[step.outputs[i]] = Tensor();
        continue;
      }
      // A node declaring more outputs than its op produces (a malformed model; found by the import+build fuzzer).
      KILNRT_CHECK(ctx.outputs[i].defined(), kInvalidModel, step.node->describe(),
                   "the node declares output " << i << " ('" << step.node->outputs[i] << "'), which "
                                               << step.node->op_type << " does not produce here (too many outputs?)");
      slots[step.outputs[i]] = std::move(ctx.outputs[i]);
      seqs[step.outputs[i]].reset();
    }
    for (int r : step.release) {
      slots[r] = Tensor();
      seqs[r].reset();
    }
  }
  // An output that aliases a graph input or a constant (a view made by Reshape / Identity ...) is copied, so that
  // callers own their results and cannot write into the engine's weights.
  std::unordered_set<const void*> shared;
  for (const auto& [name, v] : inputs) shared.insert(v.tensor.raw());
  for (const auto& [s, t] : constant_slots_) shared.insert(t->raw());
  std::map<std::string, PlanValue> out;
  for (const auto& [name, s] : output_slots_) {
    PlanValue& v = out[name];
    if (seqs[s]) {  // sequences are immutable once made: sharing one with an input is safe
      v.sequence = seqs[s];
      continue;
    }
    const Tensor& t = slots[s];
    v.tensor = (t.numel() > 0 && shared.count(t.raw())) ? t.clone() : t;
  }
  return out;
}

}  // namespace kilnrt::backends::cpu
