#include "engine/layer_precision.h"

#include <algorithm>
#include <unordered_set>

#include "core/check.h"
#include "core/logging.h"

namespace kilnrt::engine {

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative wildcard match with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

void set_precision(ir::Node& n, const std::string& p) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = p;
  n.attrs["kilnrt_precision"] = a;
}

}  // namespace

void assign_layer_precisions(ir::Graph& graph, const BuildOptions& options, bool cuda) {
  const std::string engine16 = options.fp16 ? "fp16" : options.bf16 ? "bf16" : "";
  if (cuda) {
    // --fp16 / --bf16: every layer runs with 16-bit activations (float32 math inside kernels); a layer without
    // 16-bit kernels runs as a float32 island. --tf32 lets GEMMs and convolutions (fused ones too) use TF32.
    for (ir::Node& n : graph.nodes) {
      const bool gemm_or_conv = n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Conv" ||
                                n.op_type == "FusedMatMul" || n.op_type == "FusedConv";  // com.kilnrt fusions
      if (!engine16.empty())
        set_precision(n, engine16);
      else if (gemm_or_conv && options.tf32)
        set_precision(n, "tf32");
    }
  }
  for (const auto& [pattern, precision] : options.layer_precisions) {
    const std::string where = "layer precision '" + pattern + "=" + precision + "'";
    KILNRT_CHECK(!pattern.empty(), kInvalidArgument, where, "empty layer pattern (expected PATTERN=fp32|fp16|bf16)");
    KILNRT_CHECK(precision == "fp32" || precision == "fp16" || precision == "bf16", kInvalidArgument, where,
                 "unknown precision '" << precision << "' (expected fp32, fp16 or bf16)");
    const bool is16 = precision != "fp32";
    if (cuda && is16) {
      KILNRT_CHECK(!engine16.empty(), kInvalidArgument, where,
                   "a " << precision << " layer inside a float32 engine is not supported (an engine stores its "
                        << "activations in one dtype): build with --" << precision
                        << " and pin the layers that must stay float32 with --layer-precision PATTERN=fp32 "
                        << "(e.g. '*=fp32' first, then '" << pattern << "=" << precision << "')");
      KILNRT_CHECK(precision == engine16, kInvalidArgument, where,
                   "the engine's 16-bit activations are " << engine16 << ": mixing fp16 and bf16 layers is not "
                                                          << "supported (use " << engine16 << " or fp32)");
    }
    size_t matched = 0;
    for (ir::Node& n : graph.nodes) {
      if (!glob_match(pattern, n.name) && !glob_match(pattern, n.op_type)) continue;
      ++matched;
      if (cuda) set_precision(n, precision);
    }
    KILNRT_CHECK(matched > 0, kInvalidArgument, where,
                 "pattern '" << pattern << "' matches no layer name or op type of the optimized graph ("
                             << graph.nodes.size() << " layers; `kilnrt inspect` of an engine lists them)");
    if (!cuda && is16)
      KILNRT_LOG(kWarning, where << ": the CPU backend computes in float32; 16-bit precisions apply to CUDA engines");
  }
}

std::vector<std::string> mark_all_outputs(ir::Graph& graph) {
  std::unordered_set<std::string> data(graph.inputs.begin(), graph.inputs.end());
  std::unordered_set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  std::vector<std::string> marked;
  for (const ir::Node& n : graph.nodes) {
    if (n.op_type == "Shape" || n.op_type == "Size") continue;
    bool reads_data = false;
    for (const std::string& in : n.inputs) reads_data |= !in.empty() && data.count(in) != 0;
    for (const std::string& in : ir::outer_scope_reads(n)) reads_data |= data.count(in) != 0;  // If/Loop/Scan bodies
    if (!reads_data) continue;
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      data.insert(out);
      if (outputs.insert(out).second) {
        graph.outputs.push_back(out);
        marked.push_back(out);
      }
    }
  }
  return marked;
}

void prune_marked_outputs(ir::Graph& graph, const std::vector<std::string>& marked) {
  const std::unordered_set<std::string> was_marked(marked.begin(), marked.end());
  std::vector<std::string> kept;
  size_t dropped = 0;
  for (const std::string& out : graph.outputs) {
    const ir::TensorType* t = graph.type_of(out);
    const bool usable =
        !graph.is_constant(out) && t && t->dtype != DType::kUndefined && t->has_shape && !t->is_sequence;
    if (was_marked.count(out) && !usable) {
      ++dropped;
      KILNRT_LOG(kInfo, "mark_all_outputs: '" << out << "' is not marked (a constant after folding, or its type is "
                                              << "unknown)");
      continue;
    }
    kept.push_back(out);
  }
  graph.outputs = std::move(kept);
  if (dropped) KILNRT_LOG(kInfo, "mark_all_outputs: " << dropped << " value(s) left unmarked");
}

}  // namespace kilnrt::engine
