#include "ops/sequence/sequence_support.h"

#include "core/check.h"

namespace kilnrt::ops {
namespace {

bool is_sequence_value(const ir::Graph& g, const std::string& name) {
  const ir::TensorType* t = name.empty() ? nullptr : g.type_of(name);
  return t && t->is_sequence;
}

// The first node of `g` (bodies searched too) using sequences, described; "" when none does.
std::string first_sequence_user(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    bool uses = is_sequence_op(n.op_type);
    for (const std::string& v : n.inputs) uses = uses || is_sequence_value(g, v);
    for (const std::string& v : n.outputs) uses = uses || is_sequence_value(g, v);
    if (uses) return n.describe();
    for (const auto& kv : n.attrs) {
      if (kv.second.kind != ir::Attribute::Kind::kGraph || !kv.second.g) continue;
      const std::string inner = first_sequence_user(*kv.second.g);
      if (!inner.empty()) return n.describe() + ", body node " + inner;
    }
  }
  return "";
}

}  // namespace

bool is_sequence_op(const std::string& op_type) {
  return op_type.rfind("Sequence", 0) == 0 || op_type == "SplitToSequence" || op_type == "ConcatFromSequence";
}

void check_no_sequences(const ir::Graph& graph, const std::string& backend) {
  const std::string user = first_sequence_user(graph);
  KILNRT_CHECK(
      user.empty(), kUnsupported, user,
      "sequence values are not supported on " << backend << " yet: build this model for the CPU (--device cpu)");
}

bool node_uses_sequences(const ir::Node& n, const ir::Graph& graph) {
  bool uses = is_sequence_op(n.op_type);
  for (const std::string& v : n.inputs) uses = uses || is_sequence_value(graph, v);
  for (const std::string& v : n.outputs) uses = uses || is_sequence_value(graph, v);
  for (const auto& kv : n.attrs)
    if (kv.second.kind == ir::Attribute::Kind::kGraph && kv.second.g)
      uses = uses || !first_sequence_user(*kv.second.g).empty();
  return uses;
}

// The first node of `g` (bodies searched too) that the CUDA backend cannot run with sequences, described; "" none.
static std::string first_cuda_sequence_problem(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    const bool passes =
        n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Identity" || is_sequence_op(n.op_type);
    bool bad = false;
    for (const std::string& v : n.inputs) bad = bad || (!passes && is_sequence_value(g, v));
    for (const std::string& v : n.outputs) bad = bad || (!passes && is_sequence_value(g, v));
    if (bad) return n.describe();
    for (const auto& kv : n.attrs) {
      if (kv.second.kind != ir::Attribute::Kind::kGraph || !kv.second.g) continue;
      const std::string inner =
          n.op_type == "Scan" ? first_sequence_user(*kv.second.g) : first_cuda_sequence_problem(*kv.second.g);
      if (!inner.empty()) return n.describe() + ", body node " + inner;
    }
  }
  return "";
}

void check_cuda_sequences(const ir::Graph& graph) {
  const std::string where = first_cuda_sequence_problem(graph);
  KILNRT_CHECK(where.empty(), kUnsupported, where,
               "sequence values are not supported on CUDA yet here (sequences in Scan bodies, and sequences "
               "through other ops than the sequence ops, Identity, If and Loop): build this model for the CPU "
               "(--device cpu)");
}

}  // namespace kilnrt::ops
