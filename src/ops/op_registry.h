// The op registry: each op (src/ops/<group>/<op>.cc) registers its schema — symbolic shape function and CPU
// reference kernel — with KILNRT_REGISTER_OP. Backends and passes look ops up here; the IR knows nothing of ops.
#pragma once
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/error.h"
#include "kilnrt/tensor.h"

namespace kilnrt::ops {

// Symbolic shape inference for one node.
struct ShapeContext {
  const ir::Node& node;
  int64_t opset = 0;                          // version of the node's domain
  std::vector<const ir::TensorType*> inputs;  // nullptr for an omitted optional input
  std::vector<const Tensor*> values;          // constant value of each input if known, else nullptr
  std::vector<ir::TensorType> outputs;        // to fill: one per node output (pre-sized)

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const ir::TensorType& input(size_t i) const;  // throws naming the node if absent
  const Tensor* value(size_t i) const { return i < values.size() ? values[i] : nullptr; }
  // Convenience: output i gets dtype and a known/symbolic shape.
  void set_output(size_t i, DType dtype, ir::SymShape shape);
  void set_output_rank_unknown(size_t i, DType dtype);
};
using ShapeFn = std::function<void(ShapeContext&)>;

// The CPU value of an ONNX sequence: its tensors in order (held on the host).
using TensorSequence = std::vector<Tensor>;

// Runs one node on the CPU. Inputs are host tensors (nullptr for an omitted optional input); the kernel creates
// its outputs (Tensor::empty) and may return a view of an input (e.g. Reshape) for outputs.
// Sequence values (src/ops/sequence): an input that is a sequence has seq_inputs[i] set (and an undefined tensor in
// inputs[i]); a kernel producing a sequence sets seq_outputs[i] (sized by the kernel) instead of outputs[i].
struct CpuContext {
  const ir::Node& node;
  int64_t opset = 0;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> outputs;                      // pre-sized to node.outputs.size(); fill every non-omitted output
  std::vector<const TensorSequence*> seq_inputs{};  // empty, or one per input (nullptr: not a sequence)
  std::vector<std::optional<TensorSequence>> seq_outputs{};  // empty, or one per output

  bool has_sequence_input(size_t i) const { return i < seq_inputs.size() && seq_inputs[i] != nullptr; }
  const TensorSequence& sequence_input(size_t i) const;  // throws naming the node if input i is not a sequence
  void set_sequence_output(size_t i, TensorSequence seq);

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr && inputs[i]->defined(); }
  const Tensor& input(size_t i) const;  // throws naming the node if absent
  bool wants_output(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }
};
using CpuKernelFn = std::function<void(CpuContext&)>;

struct OpSchema {
  std::string domain;  // "" = ai.onnx
  std::string op_type;
  int since_version = 1;     // oldest opset version this schema implements
  int until_version = 1000;  // newest (inclusive)
  ShapeFn infer;
  CpuKernelFn cpu;
  std::vector<DType> dtypes;  // dtypes of the main data input the CPU kernel handles (documentation + checks)
  std::string doc;            // one line for docs/operators.md
  std::string source = {};    // the registering file relative to src/ (set by KILNRT_REGISTER_OP; "" for custom ops)
};

// A source file path (__FILE__) relative to the tree's src/ folder ("ops/nn/normalization/normalization.cc").
std::string source_path_in_tree(const char* file);

// Thread-safe; schemas are never removed and never move, so pointers to them stay valid while ops are added (custom
// ops register at run time, see include/kilnrt/custom_op.h).
class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpSchema schema);
  // The schema for (domain, op_type) at `opset`, or nullptr.
  const OpSchema* find(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Like find() but throws kUnsupported naming the node, op and opset when missing.
  const OpSchema& get(const ir::Node& node, int64_t opset) const;
  std::vector<const OpSchema*> all() const;

 private:
  mutable std::mutex mutex_;
  std::deque<OpSchema> schemas_;
};

struct OpRegistrar {
  OpRegistrar(OpSchema s, const char* file) {
    s.source = source_path_in_tree(file);
    OpRegistry::instance().add(std::move(s));
  }
};

#define KILNRT_OPS_CONCAT2(a, b) a##b
#define KILNRT_OPS_CONCAT(a, b) KILNRT_OPS_CONCAT2(a, b)
// Usage: KILNRT_REGISTER_OP(OpSchema{"", "Relu", 13, 1000, infer_fn, cpu_fn, {DType::kFloat32}, "max(x, 0)"});
#define KILNRT_REGISTER_OP(...) \
  static ::kilnrt::ops::OpRegistrar KILNRT_OPS_CONCAT(kilnrt_op_registrar_, __COUNTER__)(__VA_ARGS__, __FILE__)

// Helpers shared by shape functions and kernels.
// Numpy-style multidirectional broadcasting; throws naming the node on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Node& node);
ir::SymShape broadcast_sym_shapes(const ir::SymShape& a, const ir::SymShape& b, const ir::Node& node);
// Normalises a possibly negative axis against rank; throws naming the node when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node);
// Reads an int64/int32 tensor's elements as int64.
std::vector<int64_t> tensor_to_int64s(const Tensor& t);

}  // namespace kilnrt::ops
