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
  KILNRT_CHECK(user.empty(), kUnsupported, user,
               "sequence values are not supported on " << backend << " yet: build this model for the CPU (--device cpu)");
}

void check_cuda_sequences(const ir::Graph& graph) {
  for (const ir::Node& n : graph.nodes) {
    bool uses = n.op_type == "SequenceMap";
    if (!is_sequence_op(n.op_type) && n.op_type != "Identity") {
      for (const std::string& v : n.inputs) uses = uses || is_sequence_value(graph, v);
      for (const std::string& v : n.outputs) uses = uses || is_sequence_value(graph, v);
    }
    std::string where = uses ? n.describe() : "";
    for (const auto& kv : n.attrs) {
      if (!where.empty() || kv.second.kind != ir::Attribute::Kind::kGraph || !kv.second.g) continue;
      const std::string inner = first_sequence_user(*kv.second.g);
      if (!inner.empty()) where = n.describe() + ", body node " + inner;
    }
    KILNRT_CHECK(where.empty(), kUnsupported, where,
                 "sequence values are not supported on CUDA yet here (the main graph's sequence ops run on CUDA; "
                 "SequenceMap and sequences in If / Loop / Scan bodies do not): build this model for the CPU "
                 "(--device cpu)");
  }
}

}  // namespace kilnrt::ops
