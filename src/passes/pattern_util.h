// Helpers shared by the pattern-fusion and rewrite passes (fuse_attention, fuse_gelu, fuse_layernorm, patchify_conv,
// select_packed_qkv, split_packed_projection, batch_first_attention, ...): who produces and who reads each value,
// op tests, shapes and constants.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace kilnrt::passes {

class GraphIndex {
 public:
  explicit GraphIndex(const ir::Graph& g);
  // The node producing `value`, or nullptr (graph input, constant).
  const ir::Node* producer(const std::string& value) const;
  // How many times nodes (inputs and subgraph outer-scope reads) and graph outputs read `value`.
  int uses(const std::string& value) const;
  // The only reader of `value` when it has exactly one use and is no graph output, else nullptr.
  const ir::Node* sole_consumer(const std::string& value) const;

 private:
  const ir::Graph& g_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::vector<size_t>> readers_;
  std::unordered_map<std::string, int> uses_;
};

// Whether `n` is a node of the default (ONNX) domain with op type `op`; false for nullptr.
bool is_op(const ir::Node* n, const char* op);
// The value's shape when its type has one (symbolic dims allowed), else nullptr.
const ir::SymShape* shape_of(const ir::Graph& g, const std::string& value);
// The values of an int64 / int32 constant (any rank, flattened in order), else nullopt.
std::optional<std::vector<int64_t>> int_constant(const ir::Graph& g, const std::string& value);
// The value of a float constant with exactly one element (any rank), else nullopt.
std::optional<double> scalar_constant(const ir::Graph& g, const std::string& value);
// For a binary node with one scalar-constant input: that constant and the other input's index.
bool binary_with_scalar(const ir::Graph& g, const ir::Node& n, double* c, int* other);
bool near(double a, double b, double rel = 1e-3);
// A default-domain node `op` named `name` with these inputs and one output.
ir::Node make_node(const std::string& name, const char* op, std::vector<std::string> inputs, const std::string& output);
// Makes sure the graph imports the com.kilnrt domain (version 1) for the fused nodes.
void use_kilnrt_domain(ir::Graph& g);
// Adds constant `t` under a new unique name derived from `base` (with its type); returns the name.
std::string add_constant(ir::Graph& g, const std::string& base, Tensor t);
// Deletes the nodes whose names are in `names` (order otherwise kept).
void erase_nodes(ir::Graph& g, const std::vector<std::string>& names);

// One fusion found by a pass: the fused node and the names of the nodes it replaces.
struct FusionMatch {
  ir::Node fused;
  std::vector<std::string> erase;
};
using FusionMatcher = std::function<bool(const ir::Graph&, const GraphIndex&, const ir::Node&, FusionMatch*)>;
// Runs `match` on every node (matches must not overlap), then replaces each match's nodes by its fused node,
// imports the com.kilnrt domain and re-sorts the graph. Returns the number of fusions (logged as "fused N <what>").
size_t apply_fusions(ir::Graph& g, const FusionMatcher& match, const char* what);

}  // namespace kilnrt::passes
