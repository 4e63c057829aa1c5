// An ONNX test model with sequence values (tests/cpp/test_sequence_ops.cc, test_cuda_sequences.cc): torch-like list
// building, with sequence_type value infos written by hand (onnx_test_writer.h writes tensor types only).
#pragma once
#include <string>

#include "onnx_test_writer.h"

namespace kilnrt::seqtest {

using namespace kilnrt::onnx_test;

// A ValueInfoProto of sequence_type(tensor_type(elem, rank-1 unknown dim)); `field` 11 input, 12 output, 13 value_info.
inline std::string sequence_value_info(uint32_t field, const std::string& name, int32_t elem) {
  ProtoWriter dim, shape, tensor, seq_elem, seq, type, vi, out;
  shape.message_field(1, dim.bytes());
  tensor.int_field(1, elem);
  tensor.message_field(2, shape.bytes());
  seq_elem.message_field(1, tensor.bytes());
  seq.message_field(1, seq_elem.bytes());
  type.message_field(4, seq.bytes());
  vi.bytes_field(1, name);
  vi.message_field(2, type.bytes());
  out.message_field(field, vi.bytes());
  return out.bytes();
}

inline std::string tensor_value_info(uint32_t field, const ValueInfoSpec& v) {
  ProtoWriter out;
  out.message_field(field, v.serialize());
  return out.bytes();
}

// torch-like list building: rows = SplitToSequence(x, 2); Loop over len(rows) appends 2 * rows[i] to a sequence
// state (body input / output declared as sequence_type); y = ConcatFromSequence(state, axis 0) = 2 * x.
inline ModelSpec list_model() {
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {5, 3}));
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::unknown(), 3}));
  m.graph.initializers.push_back(TensorSpec::int64_typed("two_rows", {}, {2}));
  m.graph.nodes.push_back(NodeSpec{"SplitToSequence", {"x", "two_rows"}, {"rows"}});
  m.graph.nodes.push_back(NodeSpec{"SequenceLength", {"rows"}, {"n"}});
  m.graph.nodes.push_back(NodeSpec{"SequenceEmpty", {}, {"acc0"}, {AttrSpec::Int("dtype", kFloat)}});
  GraphSpec body;
  body.name = "append_body";
  body.initializers.push_back(TensorSpec::float_raw("k", {}, {2.f}));
  body.nodes.push_back(NodeSpec{"SequenceAt", {"rows", "i"}, {"r"}});
  body.nodes.push_back(NodeSpec{"Mul", {"r", "k"}, {"r2"}});
  body.nodes.push_back(NodeSpec{"SequenceInsert", {"acc_in", "r2"}, {"acc_out"}});
  body.nodes.push_back(NodeSpec{"Identity", {"c_in"}, {"c_out"}});
  body.extra =
      tensor_value_info(11, ValueInfoSpec::tensor("i", kInt64, {})) +
      tensor_value_info(11, ValueInfoSpec::tensor("c_in", kBool, {})) + sequence_value_info(11, "acc_in", kFloat) +
      tensor_value_info(12, ValueInfoSpec::tensor("c_out", kBool, {})) + sequence_value_info(12, "acc_out", kFloat);
  m.graph.nodes.push_back(NodeSpec{"Loop", {"n", "", "acc0"}, {"acc"}, {AttrSpec::Graph("body", body)}});
  m.graph.nodes.push_back(NodeSpec{"ConcatFromSequence", {"acc"}, {"y"}, {AttrSpec::Int("axis", 0)}});
  m.graph.extra = sequence_value_info(13, "rows", kFloat);
  return m;
}

}  // namespace kilnrt::seqtest
