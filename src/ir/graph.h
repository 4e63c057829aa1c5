// The IR: values (name, dtype, shape with symbolic dims, optional constant data) and nodes (op, attributes, inputs,
// outputs). Everything after ONNX import speaks this, never protobuf. The IR knows nothing of ops.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "kilnrt/dtype.h"
#include "kilnrt/tensor.h"

namespace kilnrt::ir {

// One dimension: a known size (value >= 0), or unknown (value == -1) with an optional symbolic name ("batch").
struct Dim {
  int64_t value = -1;
  std::string param;
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from a size is convenient in shape functions
  static Dim symbol(std::string name) {
    Dim d;
    d.param = std::move(name);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && (value >= 0 || param == o.param); }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};
using SymShape = std::vector<Dim>;
std::string sym_shape_to_string(const SymShape& s);  // "batchx3x224x224", "?" for an unknown unnamed dim
bool sym_shape_known(const SymShape& s);             // every dim known
Shape sym_shape_to_shape(const SymShape& s);         // unknown dims -> -1
SymShape shape_to_sym(const Shape& s);

struct TensorType {
  DType dtype = DType::kUndefined;
  bool has_shape = false;  // false: rank unknown
  SymShape shape;
  // For small 1-D / scalar int64 tensors computed from shapes (Shape -> Gather -> Concat ...): the element values
  // as symbolic dims, so Reshape/Expand outputs keep names like "batch". Empty when not known.
  std::optional<SymShape> sym_value;
  // A sequence value (ONNX sequence_type): an ordered list of tensors whose element dtype is `dtype` and whose element
  // shape (common to all elements when has_shape) is `shape`. Only sequence ops, If/Loop and Identity handle them.
  bool is_sequence = false;
};

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph };
  Kind kind = Kind::kInt;
  float f = 0.f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<struct Graph> g;  // subgraph (If/Loop bodies): imported, not yet executed by the slice
};

struct Node {
  std::string name;                  // unique within the graph (import names unnamed nodes "<op>_<index>")
  std::string op_type;               // "Conv"
  std::string domain;                // "" for the default ONNX domain
  std::vector<std::string> inputs;   // "" for an omitted optional input
  std::vector<std::string> outputs;  // "" for an omitted optional output
  std::map<std::string, Attribute> attrs;

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  // Typed getters; throw kilnrt::Error (naming node and attribute) on a kind mismatch or a missing required one.
  int64_t attr_int(const std::string& k, std::optional<int64_t> dflt = std::nullopt) const;
  float attr_float(const std::string& k, std::optional<float> dflt = std::nullopt) const;
  std::string attr_string(const std::string& k, std::optional<std::string> dflt = std::nullopt) const;
  std::vector<int64_t> attr_ints(const std::string& k, std::optional<std::vector<int64_t>> dflt = std::nullopt) const;
  std::vector<float> attr_floats(const std::string& k, std::optional<std::vector<float>> dflt = std::nullopt) const;
  const Tensor& attr_tensor(const std::string& k) const;
  // "Conv 'conv1'" for messages.
  std::string describe() const;
};

// The outer-scope values a node's subgraphs (If/Loop/Scan bodies, recursively) read: values used in a body that the
// body neither defines nor takes as an input. They are dependencies of the node like its inputs (topological order,
// liveness), sorted by name. Empty for nodes without subgraphs.
std::vector<std::string> outer_scope_reads(const Node& node);

struct Graph {
  std::string name;
  std::vector<Node> nodes;                            // topologically sorted after import
  std::unordered_map<std::string, TensorType> types;  // value name -> type (inputs, outputs, intermediates)
  std::unordered_map<std::string, Tensor> constants;  // initializers and folded constants
  std::vector<std::string> inputs;                    // graph inputs, without initializers
  std::vector<std::string> outputs;
  std::map<std::string, int64_t> opsets;  // domain -> version ("" is ai.onnx)
  std::string producer;                   // "pytorch 1.13.1"

  int64_t opset(const std::string& domain = "") const;
  bool is_constant(const std::string& value) const { return constants.count(value) != 0; }
  const TensorType* type_of(const std::string& value) const;
  // Sorts nodes topologically; throws kInvalidModel naming a node whose input is never produced, or a cycle.
  void topo_sort();
  // Removes constants and types of values no node or output refers to.
  void prune_unused();
  // A readable listing (one line per node) for `inspect` and debugging.
  std::string to_string(bool with_types = true) const;
};

}  // namespace kilnrt::ir
