// Helpers shared by the rewriting passes (Conv+BN folding, conv epilogue fusion): how often each value is read
// (node inputs, outer-scope reads of If/Loop/Scan bodies, graph outputs), and fresh value names.
#pragma once
#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace kilnrt::passes {

// Value name -> number of reads; a graph output counts as one extra read, so a value that is a graph output is
// never "used only once" by a node.
std::unordered_map<std::string, int> count_value_uses(const ir::Graph& graph);

// `base` if no value, constant or type of the graph has that name, else `base` + "_1", "_2" ...
std::string unique_value_name(const ir::Graph& graph, const std::string& base);

}  // namespace kilnrt::passes
