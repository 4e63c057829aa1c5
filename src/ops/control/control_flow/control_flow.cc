// If, Loop, Scan and SequenceMap on the CPU backend: host control flow that runs the bodies (Attribute::g) with a
// CpuPlan.
// Outer-scope values a body reads arrive as extra kernel inputs after the node's own (CpuPlan passes
// backends::cpu::subgraph_free_values(node) there) and are handed to the body plan as extra inputs.
// Values may be sequences (If branches returning sequences, loop-carried sequences, outer-scope sequences); Scan
// states and every scan output are tensors.
#include <algorithm>
#include <cstring>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "core/check.h"
#include "core/failure_injection.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

using backends::cpu::CpuPlan;

const ir::Graph& body_of(const ir::Node& node, const std::string& attr) {
  auto it = node.attrs.find(attr);
  KILNRT_CHECK(it != node.attrs.end(), kInvalidModel, node.describe(), "missing graph attribute '" << attr << "'");
  KILNRT_CHECK(it->second.kind == ir::Attribute::Kind::kGraph && it->second.g, kInvalidModel, node.describe(),
               "attribute '" << attr << "' is not a graph");
  return *it->second.g;
}

using backends::cpu::PlanValue;

// Input i of the kernel as a plan value (a tensor, or a sequence); an undefined tensor when omitted.
PlanValue input_value(const CpuContext& ctx, size_t i) {
  PlanValue v;
  if (ctx.has_sequence_input(i))
    v.sequence = std::make_shared<const TensorSequence>(*ctx.seq_inputs[i]);
  else if (i < ctx.inputs.size() && ctx.inputs[i])
    v.tensor = *ctx.inputs[i];
  return v;
}

void set_output_value(CpuContext& ctx, size_t i, const PlanValue& v) {
  if (v.is_sequence())
    ctx.set_sequence_output(i, *v.sequence);
  else
    ctx.outputs[i] = v.tensor;
}

// A body result that must be a tensor (Loop/Scan scan outputs, Scan states, conditions).
const Tensor& tensor_of(const PlanValue& v, const ir::Node& node, const char* what) {
  KILNRT_CHECK(!v.is_sequence(), kInvalidModel, node.describe(),
               what << " must be a tensor, the body gives a sequence");
  return v.tensor;
}

// The outer-scope values passed by CpuPlan after the node's own inputs.
struct OuterScope {
  std::vector<std::string> names;
  std::map<std::string, PlanValue> values;
};

OuterScope outer_scope(const CpuContext& ctx) {
  OuterScope s;
  s.names = backends::cpu::subgraph_free_values(ctx.node);
  const size_t base = ctx.node.inputs.size();
  KILNRT_CHECK(ctx.inputs.size() == base + s.names.size(), kUnsupported, ctx.node.describe(),
               "the body reads " << s.names.size() << " outer-scope value(s)"
                                 << (s.names.empty() ? "" : " ('" + s.names[0] + "', ...)")
                                 << " that were not passed to the kernel (run it through the CPU executor)");
  for (size_t k = 0; k < s.names.size(); ++k) {
    PlanValue v = input_value(ctx, base + k);
    KILNRT_CHECK(v.is_sequence() || v.tensor.defined(), kInvalidModel, ctx.node.describe(),
                 "outer-scope value '" << s.names[k] << "' is not available");
    s.values[s.names[k]] = std::move(v);
  }
  return s;
}

// Runs a body: `args` bound to its inputs in order, plus the outer scope; returns its outputs in order.
class Body {
 public:
  Body(const CpuContext& ctx, const std::string& attr, const OuterScope& outer)
      : node_(ctx.node), g_(body_of(ctx.node, attr)), outer_(outer) {
    plan_ = std::make_unique<CpuPlan>(g_, outer_.names);
  }
  const ir::Graph& graph() const { return g_; }
  std::vector<PlanValue> run(const std::vector<PlanValue>& args) const {
    KILNRT_CHECK(args.size() == g_.inputs.size(), kInvalidModel, node_.describe(),
                 "body '" << g_.name << "' takes " << g_.inputs.size() << " inputs, the node gives " << args.size());
    std::map<std::string, PlanValue> in = outer_.values;
    for (size_t i = 0; i < args.size(); ++i) in[g_.inputs[i]] = args[i];
    std::map<std::string, PlanValue> out = plan_->run_values(in);
    std::vector<PlanValue> res;
    for (const std::string& o : g_.outputs) res.push_back(out.at(o));
    return res;
  }

 private:
  const ir::Node& node_;
  const ir::Graph& g_;
  const OuterScope& outer_;
  std::unique_ptr<CpuPlan> plan_;
};

bool scalar_bool(const Tensor& t, const ir::Node& node, const char* what) {
  KILNRT_CHECK(t.numel() == 1, kInvalidArgument, node.describe(), what << " must hold one element, has " << t.numel());
  switch (t.dtype()) {
    case DType::kBool: return t.data<bool>()[0];
    case DType::kUInt8:
    case DType::kInt8: return t.data<uint8_t>()[0] != 0;
    case DType::kInt32: return t.data<int32_t>()[0] != 0;
    case DType::kInt64: return t.data<int64_t>()[0] != 0;
    case DType::kFloat32: return t.data<float>()[0] != 0.f;
    default:
      KILNRT_THROW(kInvalidArgument, node.describe(), what << " has unsupported dtype " << dtype_name(t.dtype()));
  }
}

// Scalar (or 1-element of the rank the body declares) tensors for Loop's iteration number and condition.
Shape scalar_shape(const ir::Graph& g, size_t input) {
  const ir::TensorType* t = input < g.inputs.size() ? g.type_of(g.inputs[input]) : nullptr;
  return (t && t->has_shape && t->shape.size() == 1) ? Shape{1} : Shape{};
}

// Slice `index` of `t` along `axis` (the axis removed).
Tensor slice_axis(const Tensor& t, int64_t axis, int64_t index) {
  Shape s = t.shape();
  const int64_t len = s[axis];
  s.erase(s.begin() + axis);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int64_t i = 0; i < axis; ++i) outer *= t.shape()[i];
  for (int64_t i = axis + 1; i < t.rank(); ++i) inner *= t.shape()[i];
  Tensor out = Tensor::empty(t.dtype(), s);
  auto* dst = static_cast<char*>(out.raw());
  const auto* src = static_cast<const char*>(t.raw());
  for (int64_t o = 0; o < outer; ++o)
    if (inner > 0) std::memcpy(dst + o * inner, src + (o * len + index) * inner, static_cast<size_t>(inner));
  return out;
}

// Stacks equally shaped `parts` along a new `axis` (parts[j] at position j). `empty_part` describes the part's
// dtype/shape when there are no parts.
Tensor stack_axis(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Shape& empty_part,
                  const ir::Node& node) {
  const Shape part = parts.empty() ? empty_part : parts[0].shape();
  const DType dt = parts.empty() ? dtype : parts[0].dtype();
  KILNRT_CHECK(axis >= 0 && axis <= static_cast<int64_t>(part.size()), kInvalidModel, node.describe(),
               "scan output axis " << axis << " out of range for rank " << part.size() + 1);
  for (const Tensor& p : parts)
    KILNRT_CHECK(p.shape() == part && p.dtype() == dt, kInvalidArgument, node.describe(),
                 "scan output changes shape or dtype between iterations (" << shape_to_string(part) << " vs "
                                                                           << shape_to_string(p.shape()) << ")");
  Shape s = part;
  const int64_t len = static_cast<int64_t>(parts.size());
  s.insert(s.begin() + axis, len);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(dt));
  for (int64_t i = 0; i < axis; ++i) outer *= part[i];
  for (size_t i = static_cast<size_t>(axis); i < part.size(); ++i) inner *= part[i];
  Tensor out = Tensor::empty(dt, s);
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t j = 0; j < len; ++j) {
    const auto* src = static_cast<const char*>(parts[j].raw());
    for (int64_t o = 0; o < outer; ++o)
      if (inner > 0) std::memcpy(dst + (o * len + j) * inner, src + o * inner, static_cast<size_t>(inner));
  }
  return out;
}

// Declared type of a body output (nullptr when the body does not declare it).
const ir::TensorType* body_output_type(const ir::Graph& g, size_t i) {
  return i < g.outputs.size() ? g.type_of(g.outputs[i]) : nullptr;
}

Shape part_shape_of(const ir::TensorType* t) {
  if (!t || !t->has_shape || !ir::sym_shape_known(t->shape)) return {0};
  return ir::sym_shape_to_shape(t->shape);
}

// ---- If -------------------------------------------------------------------------------------------------------

void if_cpu(CpuContext& ctx) {
  const bool cond = scalar_bool(ctx.input(0), ctx.node, "If condition");
  OuterScope outer = outer_scope(ctx);
  Body body(ctx, cond ? "then_branch" : "else_branch", outer);
  std::vector<PlanValue> out = body.run({});
  KILNRT_CHECK(
      out.size() == ctx.node.outputs.size(), kInvalidModel, ctx.node.describe(),
      (cond ? "then" : "else") << "_branch has " << out.size() << " outputs, the node " << ctx.node.outputs.size());
  for (size_t i = 0; i < out.size(); ++i) set_output_value(ctx, i, out[i]);
}

void if_infer(ShapeContext& ctx) {
  const ir::Graph& then_g = body_of(ctx.node, "then_branch");
  const ir::Graph& else_g = body_of(ctx.node, "else_branch");
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const ir::TensorType* a = body_output_type(then_g, i);
    const ir::TensorType* b = body_output_type(else_g, i);
    if (!a || !b) {
      const ir::TensorType* known = a ? a : b;
      ctx.set_output_rank_unknown(i, known ? known->dtype : DType::kUndefined);
      ctx.outputs[i].is_sequence = known && known->is_sequence;
      continue;
    }
    const DType dt = a->dtype == b->dtype ? a->dtype : DType::kUndefined;
    ctx.outputs[i].is_sequence = a->is_sequence || b->is_sequence;
    if (!a->has_shape || !b->has_shape || a->shape.size() != b->shape.size()) {
      ctx.set_output_rank_unknown(i, dt);
      continue;
    }
    ir::SymShape s = a->shape;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != b->shape[d]) s[d] = ir::Dim();
    ctx.set_output(i, dt, s);
  }
}

// ---- Loop -----------------------------------------------------------------------------------------------------
// Inputs: M (optional int64 max trip count), cond (optional bool), v_initial... (N). Body: (iter_num, cond_in,
// v...) -> (cond_out, v..., scan_k...). Outputs: final v... (N), scan outputs (K) stacked along a new axis 0.

void loop_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  OuterScope outer = outer_scope(ctx);
  Body body(ctx, "body", outer);
  const ir::Graph& g = body.graph();
  const size_t n_carried = node.inputs.size() >= 2 ? node.inputs.size() - 2 : 0;
  KILNRT_CHECK(g.inputs.size() == n_carried + 2, kInvalidModel, node.describe(),
               "Loop body takes " << g.inputs.size() << " inputs, expected " << n_carried + 2);
  KILNRT_CHECK(g.outputs.size() >= n_carried + 1, kInvalidModel, node.describe(),
               "Loop body has " << g.outputs.size() << " outputs, expected at least " << n_carried + 1);
  const size_t n_scan = g.outputs.size() - 1 - n_carried;
  KILNRT_CHECK(node.outputs.size() <= n_carried + n_scan, kInvalidModel, node.describe(),
               "Loop has " << node.outputs.size() << " outputs, the body gives " << n_carried + n_scan);
  bool has_max = ctx.has_input(0);
  int64_t max_trips = 0;
  if (has_max) {
    const Tensor& m = ctx.input(0);
    KILNRT_CHECK(m.numel() == 1, kInvalidArgument, node.describe(), "Loop M must hold one element");
    max_trips = tensor_to_int64s(m)[0];
  }
  bool cond = ctx.has_input(1) ? scalar_bool(ctx.input(1), node, "Loop cond") : true;
  std::vector<PlanValue> carried;
  for (size_t i = 0; i < n_carried; ++i) {
    KILNRT_CHECK(ctx.has_input(2 + i) || ctx.has_sequence_input(2 + i), kInvalidModel, node.describe(),
                 "loop-carried input " << i << " is omitted");
    carried.push_back(input_value(ctx, 2 + i));
  }
  std::vector<std::vector<Tensor>> scans(n_scan);
  const Shape iter_shape = scalar_shape(g, 0), cond_shape = scalar_shape(g, 1);
  const int64_t iteration_limit = failure_injection::loop_iteration_limit();  // 0 (none) outside fuzzing
  for (int64_t it = 0; (!has_max || it < max_trips) && cond; ++it) {
    KILNRT_CHECK(iteration_limit == 0 || it < iteration_limit, kInvalidArgument, node.describe(),
                 "Loop exceeded " << iteration_limit << " iterations (limit set by failure_injection)");
    std::vector<PlanValue> args(2);
    args[0].tensor = Tensor::from_vector(std::vector<int64_t>{it}, DType::kInt64, iter_shape);
    args[1].tensor = Tensor::empty(DType::kBool, cond_shape);
    args[1].tensor.data<bool>()[0] = cond;
    args.insert(args.end(), carried.begin(), carried.end());
    std::vector<PlanValue> out = body.run(args);
    cond = scalar_bool(tensor_of(out[0], node, "the Loop body's condition output"), node, "Loop body condition output");
    for (size_t i = 0; i < n_carried; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < n_scan; ++k)
      scans[k].push_back(tensor_of(out[1 + n_carried + k], node, "a Loop scan output"));
  }
  for (size_t i = 0; i < n_carried && i < node.outputs.size(); ++i)
    if (ctx.wants_output(i)) set_output_value(ctx, i, carried[i]);
  for (size_t k = 0; k < n_scan && n_carried + k < node.outputs.size(); ++k) {
    if (!ctx.wants_output(n_carried + k)) continue;
    const ir::TensorType* t = body_output_type(g, 1 + n_carried + k);
    ctx.outputs[n_carried + k] = stack_axis(scans[k], 0, t ? t->dtype : DType::kFloat32, part_shape_of(t), node);
  }
}

// Carried output i: the input's dtype and rank; dims kept where the body declares the same dim for its output.
void carried_output(ShapeContext& ctx, size_t out, size_t in, const ir::TensorType* body_out) {
  if (!ctx.has_input(in)) {
    ctx.set_output_rank_unknown(out, body_out ? body_out->dtype : DType::kUndefined);
    ctx.outputs[out].is_sequence = body_out && body_out->is_sequence;
    return;
  }
  const ir::TensorType& t = ctx.input(in);
  ctx.outputs[out].is_sequence = t.is_sequence;
  if (!t.has_shape) {
    ctx.set_output_rank_unknown(out, t.dtype);
    return;
  }
  ir::SymShape s = t.shape;
  const bool same_rank = body_out && body_out->has_shape && body_out->shape.size() == s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (!same_rank || body_out->shape[d] != s[d]) s[d] = ir::Dim();
  ctx.set_output(out, t.dtype, s);
}

// Scan output: the body output's type with a dim of `len` inserted at `axis` (rank unknown when the body's isn't).
void scan_output(ShapeContext& ctx, size_t out, const ir::TensorType* body_out, int64_t axis, ir::Dim len) {
  if (!body_out || !body_out->has_shape) {
    ctx.set_output_rank_unknown(out, body_out ? body_out->dtype : DType::kUndefined);
    return;
  }
  ir::SymShape s = body_out->shape;
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(s.size()) + 1, ctx.node);
  s.insert(s.begin() + a, len);
  ctx.set_output(out, body_out->dtype, s);
}

void loop_infer(ShapeContext& ctx) {
  const ir::Graph& g = body_of(ctx.node, "body");
  const size_t n_carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (i < n_carried)
      carried_output(ctx, i, 2 + i, body_output_type(g, 1 + i));
    else
      scan_output(ctx, i, body_output_type(g, 1 + i), 0, ir::Dim());
  }
}

// ---- Scan (opset 9+) ------------------------------------------------------------------------------------------
// Inputs: N initial states, M scan inputs. Body: (state..., scan slices...) -> (state..., scan output slices...).

struct ScanAttrs {
  size_t n_states = 0, n_scan_in = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

ScanAttrs scan_attrs(const ir::Node& node, size_t num_inputs, size_t num_outputs) {
  ScanAttrs a;
  const int64_t m = node.attr_int("num_scan_inputs");
  KILNRT_CHECK(m >= 1 && static_cast<size_t>(m) <= num_inputs, kInvalidModel, node.describe(),
               "num_scan_inputs " << m << " out of range for " << num_inputs << " inputs");
  a.n_scan_in = static_cast<size_t>(m);
  a.n_states = num_inputs - a.n_scan_in;
  KILNRT_CHECK(num_outputs >= a.n_states, kInvalidModel, node.describe(), "Scan has fewer outputs than states");
  const size_t k = num_outputs - a.n_states;
  a.in_axes = node.attr_ints("scan_input_axes", std::vector<int64_t>(a.n_scan_in, 0));
  a.in_dirs = node.attr_ints("scan_input_directions", std::vector<int64_t>(a.n_scan_in, 0));
  a.out_axes = node.attr_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  a.out_dirs = node.attr_ints("scan_output_directions", std::vector<int64_t>(k, 0));
  KILNRT_CHECK(a.in_axes.size() == a.n_scan_in && a.in_dirs.size() == a.n_scan_in && a.out_axes.size() == k &&
                   a.out_dirs.size() == k,
               kInvalidModel, node.describe(), "scan_*_axes / scan_*_directions have the wrong length");
  return a;
}

// One scan over `xs` (scan axes already normalised): returns final states followed by the stacked scan outputs.
std::vector<Tensor> run_scan(const Body& body, const ir::Node& node, std::vector<Tensor> states,
                             const std::vector<Tensor>& xs, const std::vector<int64_t>& axes,
                             const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                             const std::vector<int64_t>& out_dirs) {
  const ir::Graph& g = body.graph();
  const size_t n_states = states.size(), n_scan_out = out_axes.size();
  KILNRT_CHECK(g.inputs.size() == n_states + xs.size() && g.outputs.size() == n_states + n_scan_out, kInvalidModel,
               node.describe(),
               "Scan body signature (" << g.inputs.size() << " -> " << g.outputs.size() << ") does not match the node");
  int64_t len = -1;
  for (size_t j = 0; j < xs.size(); ++j) {
    const int64_t l = xs[j].shape()[axes[j]];
    KILNRT_CHECK(len < 0 || l == len, kInvalidArgument, node.describe(),
                 "scan inputs have different sequence lengths (" << len << " vs " << l << ")");
    len = l;
  }
  std::vector<std::vector<Tensor>> scans(n_scan_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<PlanValue> args(n_states + xs.size());
    for (size_t i = 0; i < n_states; ++i) args[i].tensor = states[i];
    for (size_t j = 0; j < xs.size(); ++j)
      args[n_states + j].tensor = slice_axis(xs[j], axes[j], in_dirs[j] ? len - 1 - t : t);
    std::vector<PlanValue> out = body.run(args);
    for (size_t i = 0; i < n_states; ++i) states[i] = tensor_of(out[i], node, "a Scan state");
    for (size_t k = 0; k < n_scan_out; ++k) scans[k].push_back(tensor_of(out[n_states + k], node, "a Scan output"));
  }
  std::vector<Tensor> res = std::move(states);
  for (size_t k = 0; k < n_scan_out; ++k) {
    const ir::TensorType* t = body_output_type(g, n_states + k);
    std::vector<Tensor>& parts = scans[k];
    if (out_dirs[k]) std::reverse(parts.begin(), parts.end());
    const int64_t part_rank =
        parts.empty() ? static_cast<int64_t>(part_shape_of(t).size()) : static_cast<int64_t>(parts[0].rank());
    const int64_t axis = normalize_axis(out_axes[k], part_rank + 1, node);
    res.push_back(stack_axis(parts, axis, t ? t->dtype : DType::kFloat32, part_shape_of(t), node));
  }
  return res;
}

void scan_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const ScanAttrs a = scan_attrs(node, node.inputs.size(), node.outputs.size());
  OuterScope outer = outer_scope(ctx);
  Body body(ctx, "body", outer);
  std::vector<Tensor> states, xs;
  for (size_t i = 0; i < a.n_states; ++i) states.push_back(ctx.input(i));
  std::vector<int64_t> axes;
  for (size_t j = 0; j < a.n_scan_in; ++j) {
    xs.push_back(ctx.input(a.n_states + j));
    axes.push_back(normalize_axis(a.in_axes[j], xs.back().rank(), node));
  }
  std::vector<Tensor> res = run_scan(body, node, states, xs, axes, a.in_dirs, a.out_axes, a.out_dirs);
  for (size_t i = 0; i < res.size() && i < node.outputs.size(); ++i)
    if (ctx.wants_output(i)) ctx.outputs[i] = std::move(res[i]);
}

// Scan opset 8: input 0 is the optional sequence_lens, every other input and output has a leading batch axis and
// the scan axis is 1 (`directions` per scan input). Runs one opset-9 scan per batch entry.
void scan8_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  KILNRT_CHECK(!node.inputs.empty(), kInvalidModel, node.describe(), "Scan-8 needs inputs");
  const size_t n_in = node.inputs.size() - 1;
  const int64_t m = node.attr_int("num_scan_inputs");
  KILNRT_CHECK(m >= 1 && static_cast<size_t>(m) <= n_in, kInvalidModel, node.describe(),
               "num_scan_inputs " << m << " out of range for " << n_in << " inputs");
  const size_t n_scan_in = static_cast<size_t>(m), n_states = n_in - n_scan_in;
  KILNRT_CHECK(node.outputs.size() >= n_states, kInvalidModel, node.describe(), "Scan has fewer outputs than states");
  const size_t n_scan_out = node.outputs.size() - n_states;
  const std::vector<int64_t> dirs = node.attr_ints("directions", std::vector<int64_t>(n_scan_in, 0));
  KILNRT_CHECK(dirs.size() == n_scan_in, kInvalidModel, node.describe(), "directions has the wrong length");
  OuterScope outer = outer_scope(ctx);
  Body body(ctx, "body", outer);
  const Tensor& first = ctx.input(1);
  KILNRT_CHECK(first.rank() >= 1, kInvalidArgument, node.describe(), "Scan-8 inputs need a batch axis");
  const int64_t batch = first.shape()[0];
  // Every state and scan input carries the same batch axis (scan inputs: then the scan axis); checked before slicing
  // (a fuzzed model with a shorter batch read past an input: ASan).
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    const bool scan_input = i >= 1 + n_states;
    KILNRT_CHECK(t.rank() >= (scan_input ? 2 : 1) && t.shape()[0] == batch, kInvalidArgument, node.describe(),
                 "input " << i << " ('" << node.inputs[i] << "') has shape " << shape_to_string(t.shape())
                          << ": Scan-8 needs the batch axis " << batch << " first"
                          << (scan_input ? " and a scan axis" : ""));
  }
  if (ctx.has_input(0)) {
    for (int64_t l : tensor_to_int64s(ctx.input(0)))
      KILNRT_CHECK(l == ctx.input(1 + n_states).shape()[1], kUnsupported, node.describe(),
                   "sequence_lens shorter than the scan axis are not supported");
  }
  std::vector<std::vector<Tensor>> per_output(n_states + n_scan_out);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states, xs;
    for (size_t i = 0; i < n_states; ++i) states.push_back(slice_axis(ctx.input(1 + i), 0, b));
    for (size_t j = 0; j < n_scan_in; ++j) xs.push_back(slice_axis(ctx.input(1 + n_states + j), 0, b));
    std::vector<Tensor> res = run_scan(body, node, states, xs, std::vector<int64_t>(n_scan_in, 0), dirs,
                                       std::vector<int64_t>(n_scan_out, 0), std::vector<int64_t>(n_scan_out, 0));
    for (size_t i = 0; i < res.size(); ++i) per_output[i].push_back(std::move(res[i]));
  }
  for (size_t i = 0; i < per_output.size() && i < node.outputs.size(); ++i)
    if (ctx.wants_output(i)) ctx.outputs[i] = stack_axis(per_output[i], 0, DType::kFloat32, {0}, node);
}

void scan8_infer(ShapeContext& ctx) {
  const ir::Graph& g = body_of(ctx.node, "body");
  const size_t n_in = ctx.num_inputs() > 0 ? ctx.num_inputs() - 1 : 0;
  const size_t n_states = n_in - std::min<size_t>(n_in, static_cast<size_t>(ctx.node.attr_int("num_scan_inputs")));
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const ir::TensorType* t = body_output_type(g, i);
    if (!t || !t->has_shape) {
      ctx.set_output_rank_unknown(i, t ? t->dtype : DType::kUndefined);
      continue;
    }
    ir::SymShape s = t->shape;
    if (i >= n_states) s.insert(s.begin(), ir::Dim());
    s.insert(s.begin(), ir::Dim());
    ctx.set_output(i, t->dtype, s);
  }
}

void scan_infer(ShapeContext& ctx) {
  const ir::Graph& g = body_of(ctx.node, "body");
  const ScanAttrs a = scan_attrs(ctx.node, ctx.num_inputs(), ctx.outputs.size());
  ir::Dim len;
  if (a.n_scan_in > 0 && ctx.has_input(a.n_states)) {
    const ir::TensorType& x = ctx.input(a.n_states);
    if (x.has_shape && !x.shape.empty()) len = x.shape[normalize_axis(a.in_axes[0], x.shape.size(), ctx.node)];
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (i < a.n_states)
      carried_output(ctx, i, i, body_output_type(g, i));
    else
      scan_output(ctx, i, body_output_type(g, i), a.out_axes[i - a.n_states], len);
  }
}

// ---- SequenceMap (opset 17) -------------------------------------------------------------------------------------
// Inputs: input_sequence, additional inputs (sequences of the same length, or tensors). The body runs once per
// element, on element i of every sequence input and on the tensor inputs as they are; output k of the node is the
// sequence of the body's output k.

void sequence_map_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  OuterScope outer = outer_scope(ctx);
  Body body(ctx, "body", outer);
  const size_t n_in = node.inputs.size();
  const TensorSequence& first = ctx.sequence_input(0);
  for (size_t j = 1; j < n_in; ++j)
    KILNRT_CHECK(!ctx.has_sequence_input(j) || ctx.seq_inputs[j]->size() == first.size(), kInvalidArgument,
                 node.describe(),
                 "sequence input " << j << " has " << ctx.seq_inputs[j]->size() << " elements, input_sequence has "
                                   << first.size());
  KILNRT_CHECK(body.graph().outputs.size() == node.outputs.size(), kInvalidModel, node.describe(),
               "the body has " << body.graph().outputs.size() << " outputs, the node " << node.outputs.size());
  std::vector<TensorSequence> results(node.outputs.size());
  for (size_t i = 0; i < first.size(); ++i) {
    std::vector<PlanValue> args(n_in);
    for (size_t j = 0; j < n_in; ++j) {
      if (ctx.has_sequence_input(j))
        args[j].tensor = (*ctx.seq_inputs[j])[i];
      else
        args[j].tensor = ctx.input(j);
    }
    std::vector<PlanValue> out = body.run(args);
    for (size_t k = 0; k < out.size(); ++k) results[k].push_back(tensor_of(out[k], node, "a SequenceMap body output"));
  }
  for (size_t k = 0; k < results.size(); ++k)
    if (ctx.wants_output(k)) ctx.set_sequence_output(k, std::move(results[k]));
}

void sequence_map_infer(ShapeContext& ctx) {
  const ir::Graph& g = body_of(ctx.node, "body");
  for (size_t k = 0; k < ctx.outputs.size(); ++k) {
    const ir::TensorType* t = body_output_type(g, k);
    if (t && t->has_shape)
      ctx.set_output(k, t->dtype, t->shape);
    else
      ctx.set_output_rank_unknown(k, t ? t->dtype : DType::kUndefined);
    ctx.outputs[k].is_sequence = true;
  }
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "If",
                            1,
                            1000,
                            if_infer,
                            if_cpu,
                            {DType::kBool},
                            "runs then_branch or else_branch on the host (tensor values only)"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "Loop",
                            1,
                            1000,
                            loop_infer,
                            loop_cpu,
                            {DType::kInt64},
                            "host loop over the body: trip count M, condition, carried values, scan outputs"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "Scan",
                            8,
                            8,
                            scan8_infer,
                            scan8_cpu,
                            {},
                            "opset-8 Scan (batch axis 0, scan axis 1): one host scan per batch entry"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "Scan",
                            9,
                            1000,
                            scan_infer,
                            scan_cpu,
                            {},
                            "host scan over axes of the scan inputs (directions and output axes), states carried"});

KILNRT_REGISTER_OP(OpSchema{"",
                            "SequenceMap",
                            17,
                            1000,
                            sequence_map_infer,
                            sequence_map_cpu,
                            {},
                            "runs the body once per element of the input sequence(s); outputs are sequences"});

}  // namespace
}  // namespace kilnrt::ops
