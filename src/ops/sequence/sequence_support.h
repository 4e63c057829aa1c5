// Which backends run ONNX sequence values. The CPU backend runs them (src/ops/sequence, If/Loop/SequenceMap bodies);
// the CUDA backend does not yet: its builder calls check_no_sequences() so that a model using sequences fails the
// build with an error naming the node, instead of failing later inside the run.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kilnrt::ops {

// Sequence ops: SequenceEmpty/Construct/Insert/At/Erase/Length/Map, SplitToSequence, ConcatFromSequence.
bool is_sequence_op(const std::string& op_type);

// Throws kUnsupported naming the first node that uses sequence values: a sequence op, a node whose input or output
// is sequence-typed (Identity, If, Loop passing sequences), or a node whose If/Loop/Scan bodies (recursively) do.
// `backend` names the backend in the message ("CUDA").
void check_no_sequences(const ir::Graph& graph, const std::string& backend);

// The CUDA backend runs the sequence ops (SequenceMap included), Identity of sequences, and If / Loop taking,
// carrying or returning sequences, in the main graph and in bodies (backends/cuda/control_flow/sequence_steps.h).
// Throws kUnsupported naming the first node it cannot run: another op taking or returning a sequence, or a Scan whose
// body uses sequences.
void check_cuda_sequences(const ir::Graph& graph);

// Whether `node` takes or returns a sequence (per the graph's types) or has a body (recursively) that uses sequences.
bool node_uses_sequences(const ir::Node& node, const ir::Graph& graph);

}  // namespace kilnrt::ops
