// Small builders for hand-made test graphs, shared by the control-flow and sequence tests on the CPU and CUDA
// backends (test_cuda_control_flow.cc, test_cuda_segments16.cc, test_sequence_ops.cc, test_cuda_sequences.cc):
// nodes with attributes, typed graph inputs, subgraph attributes, small tensors, and the Loop the control-flow tests
// share.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"

namespace kilnrt::graphtest {

// ---- types, inputs, nodes -------------------------------------------------------------------------------------------
inline ir::TensorType tensor_type(DType dt, ir::SymShape s, bool sequence = false) {
  ir::TensorType t;
  t.is_sequence = sequence;
  t.dtype = dt;
  t.has_shape = true;
  t.shape = std::move(s);
  return t;
}

// A graph input `name` of dtype `dt` and shape `s`.
inline void add_input(ir::Graph& g, const std::string& name, DType dt, ir::SymShape s) {
  g.inputs.push_back(name);
  g.types[name] = tensor_type(dt, std::move(s));
}

inline ir::Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
                     std::vector<std::string> out) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// Appends node `name` running `op` to g; returns it (for attributes).
inline ir::Node& add_node(ir::Graph& g, const std::string& op, const std::string& name, std::vector<std::string> in,
                          std::vector<std::string> out) {
  g.nodes.push_back(node(name, op, std::move(in), std::move(out)));
  return g.nodes.back();
}

// ---- attributes -----------------------------------------------------------------------------------------------------
inline void set_int(ir::Node& n, const std::string& attr, int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  n.attrs[attr] = a;
}
inline void set_ints(ir::Node& n, const std::string& attr, std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  n.attrs[attr] = a;
}
// A subgraph attribute; a body without opsets gets ai.onnx at `opset` (as the ONNX importer gives bodies: CpuPlan
// reads it).
inline void set_graph(ir::Node& n, const std::string& attr, ir::Graph body, int64_t opset = 17) {
  if (body.opsets.empty()) body.opsets[""] = opset;
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(body));
  n.attrs[attr] = a;
}
// The same on a node value (for node lists).
inline ir::Node with_int(ir::Node n, const std::string& attr, int64_t v) {
  set_int(n, attr, v);
  return n;
}
inline ir::Node with_graph(ir::Node n, const std::string& attr, ir::Graph g) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(g));
  n.attrs[attr] = a;
  return n;
}

// ---- tensors --------------------------------------------------------------------------------------------------------
inline Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, DType::kFloat32, s); }
inline Tensor i64(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, DType::kInt64, {}); }
inline Tensor i64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, DType::kInt64, {n});
}
inline Tensor boolean(bool v) {
  return Tensor::from_vector(std::vector<uint8_t>{v ? uint8_t(1) : uint8_t(0)}, DType::kBool, {});
}

// ---- the control-flow tests' Loop -----------------------------------------------------------------------------------
// Appends "the_loop": Loop(M, cond, v_init) -> (v_final, v_all) with body (i, c_in, v) -> (c_out, v + x, v + v), x [3]
// read from the outer scope, v [3] float32. `trip`: the trip count is the input "M"; `cond`: the condition is the
// input "c" and the body computes c_out = i < lim (lim an outer value), else the body passes c_in through. The
// caller declares M / c / lim / x (and v_init) in g and runs shape inference.
inline ir::Node& add_test_loop(ir::Graph& g, bool trip, bool cond, const std::string& v_init) {
  ir::Graph b;
  b.name = "loop_body";
  add_input(b, "i", DType::kInt64, {});
  add_input(b, "c_in", DType::kBool, {});
  add_input(b, "v", DType::kFloat32, {3});
  add_node(b, "Add", "step", {"v", "x"}, {"v_next"});
  add_node(b, "Add", "twice", {"v", "v"}, {"v_scan"});
  std::string c_out = "c_in";
  if (cond) {
    add_node(b, "Less", "test", {"i", "lim"}, {"c_out"});
    c_out = "c_out";
    b.types["c_out"] = tensor_type(DType::kBool, {});
  }
  b.outputs = {c_out, "v_next", "v_scan"};
  b.types["v_next"] = tensor_type(DType::kFloat32, {3});
  b.types["v_scan"] = tensor_type(DType::kFloat32, {3});
  ir::Node& n = add_node(g, "Loop", "the_loop", {trip ? "M" : "", cond ? "c" : "", v_init}, {"v_final", "v_all"});
  set_graph(n, "body", std::move(b));
  return n;
}

}  // namespace kilnrt::graphtest
