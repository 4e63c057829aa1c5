// ONNX -> IR import, with kilnrt's own bounds-checked protobuf decoder (no libprotobuf / libonnx).
//
// What it maps (src/ir/graph.h):
//   - Graph.inputs: graph inputs that are not initializers; Graph.outputs: graph outputs.
//   - Graph.types: from graph inputs / outputs / value_info (tensor types only) and from initializers.
//   - Graph.constants: initializers (raw_data, typed fields or external data), in their ONNX dtype.
//   - Nodes in topological order; unnamed (or duplicate-named) nodes get unique names "<op_type>_<index>".
//   - Graph.opsets from opset_import ("ai.onnx" is stored as ""); Graph.producer = "name version".
//   - Attributes of every kind the IR has, TENSOR and GRAPH (subgraphs, recursively) included. Subgraphs inherit the
//     model's opsets and producer and are not topologically re-sorted (they may refer to outer-scope values).
//   - Constant nodes stay nodes (a pass folds them).
// Errors: kilnrt::Error with kInvalidModel (malformed or invalid model: where = "<file>: <field path>" for wire
// format problems, the node / tensor name for semantic ones), kUnsupported (valid ONNX that kilnrt does not handle:
// sparse initializers, int16/string/... tensors, TENSORS/GRAPHS attributes), kIo (file not found / unreadable: the
// message gives the OS's reason). Bytes that are not a ModelProto at all (a wire-format error among the model's own
// fields, no ir_version / graph / opset_import, a kilnrt engine file) give kInvalidModel "'<file>' is not an ONNX
// model (<reason>)".
// Requirements: ir_version >= 3 and default-domain opset >= 1 (1..12 with a warning: see kMinOnnxOpset); newer than
// kMaxTestedOpset is accepted with a warning.
//
// External data: paths are resolved relative to the model's directory; absolute paths and paths with a ".."
// component are rejected. Symbolic links inside the directory are followed (the Hugging Face cache links blobs).
#pragma once
#include <cstddef>
#include <string>

#include "ir/graph.h"

namespace kilnrt::ir {

// Opset policy: default-domain opsets 1 to 12 are accepted with a warning; each node then needs an op schema covering
// its opset (OpSchema::since_version), else the build fails with kUnsupported naming the node, op and opset. Before
// opset 7 the binary ops had a `broadcast`/`axis` pair (unidirectional broadcasting aligned at `axis`): a node with
// broadcast=1 and an explicit axis is rejected (kUnsupported, its semantics differ from numpy broadcasting); without
// an axis the legacy rule (trailing alignment) is a special case of numpy broadcasting and is accepted.
// `consumed_inputs` (opsets 1..5: an in-place hint with no effect on the result) is ignored. Older ir_versions (3..6)
// only differ in ways the importer already handles (initializers may be listed as graph inputs).
constexpr int64_t kMinOnnxIrVersion = 3;
constexpr int64_t kMinOnnxOpset = 1;
constexpr int64_t kFirstFullySupportedOpset = 13;
constexpr int64_t kMaxTestedOpset = 25;

// Reads an ONNX file; external data is read relative to the file's directory.
Graph import_onnx_file(const std::string& path);

// Decodes a serialized ModelProto. `base_dir` is where external data lives ("" = external data not allowed);
// `label` names the model in error messages (e.g. its file name).
Graph import_onnx_bytes(const void* data, size_t size, const std::string& base_dir, const std::string& label);

}  // namespace kilnrt::ir
