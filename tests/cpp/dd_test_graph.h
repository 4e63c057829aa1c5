// A small multi-node graph builder for the data-dependent-shape tests of the CUDA backend (test_cuda_segments.cc:
// host-only plan checks; test_cuda_data_dependent.cc: GPU vs CPU reference).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"
#include "passes/shape_inference.h"

namespace kilnrt::ddtest {

struct Net {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  explicit Net(int64_t opset = 17) {
    g.name = "dd";
    g.opsets[""] = opset;
  }
  // A graph input of t's dtype and shape (t is also its feed).
  Net& input(const std::string& name, const Tensor& t) {
    g.inputs.push_back(name);
    ir::TensorType type;
    type.dtype = t.dtype();
    type.has_shape = true;
    type.shape = ir::shape_to_sym(t.shape());
    g.types[name] = type;
    feeds[name] = t;
    return *this;
  }
  Net& constant(const std::string& name, const Tensor& t) {
    g.constants[name] = t;
    return *this;
  }
  ir::Node& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs) {
    ir::Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = inputs;
    n.outputs = outputs;
    g.nodes.push_back(n);
    return g.nodes.back();
  }
  Net& output(const std::string& name) {
    g.outputs.push_back(name);
    return *this;
  }
  // Runs shape inference (call once, after the last node).
  ir::Graph& done() {
    passes::infer_shapes(g);
    return g;
  }
};

inline void set_int(ir::Node& n, const std::string& key, int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  n.attrs[key] = a;
}
inline void set_string(ir::Node& n, const std::string& key, const std::string& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = v;
  n.attrs[key] = a;
}

}  // namespace kilnrt::ddtest
