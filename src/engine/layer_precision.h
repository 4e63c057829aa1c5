// Build-time choices made per layer of the optimized graph: precision (the kilnrt_precision node attribute the
// CUDA plan reads) and the debug option that marks every intermediate tensor as an engine output.
#pragma once
#include <string>

#include "ir/graph.h"
#include "kilnrt/engine.h"

namespace kilnrt::engine {

// '*' matches any run of characters (also none); every other character matches itself.
bool glob_match(const std::string& pattern, const std::string& text);

// Sets kilnrt_precision on the nodes of `graph`. CUDA engines (`cuda`): first the engine-wide default (--fp16 /
// --bf16: every node; --tf32: MatMul / Gemm / Conv and their com.kilnrt fusions), then options.layer_precisions in
// order, a later pattern overriding an earlier one for the nodes both match. A pattern matches a node's name or op
// type.
//   "fp32" in a 16-bit engine: a float32 island (16-bit activations converted around the layer); in a --tf32
//          engine: strict float32 for that layer.
//   "fp16" / "bf16" need the engine's own 16-bit type (--fp16 / --bf16): the plan keeps one activation dtype per
//          engine, so a 16-bit layer inside a float32 engine (or bf16 inside fp16) is a build error saying how to
//          get it (a 16-bit engine with the other layers pinned to fp32).
// CPU engines compute in float32: the overrides are checked the same way (unknown precision, pattern matching no
// layer) but set nothing; 16-bit ones log a warning, as --fp16 does.
// Throws kInvalidArgument naming the pattern.
void assign_layer_precisions(ir::Graph& graph, const BuildOptions& options, bool cuda);

// mark_all_outputs, before the graph passes: every node output computed from the data of a graph input (not from
// constants or input shapes alone: Shape / Size results and what only they feed are shape computations) becomes a
// graph output, in node order after the model's own outputs. Returns the names added.
std::vector<std::string> mark_all_outputs(ir::Graph& graph);

// After the passes: drops marked outputs that turned into constants or whose type is unknown (logged), so that
// every engine output is a computed tensor with a known dtype and rank.
void prune_marked_outputs(ir::Graph& graph, const std::vector<std::string>& marked);

}  // namespace kilnrt::engine
