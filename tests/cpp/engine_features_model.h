// A small MLP-like ONNX model for the engine-feature tests (precision overrides, mark_all_outputs, activation
// memory), written with onnx_test_writer.h: x[batch, in] -> MatMul 'mm' -> Add 'bias_add' -> Relu 'relu' ->
// Shape 'shape' + Reshape 'reshape' (a shape computation and an alias) -> MatMul 'mm2' -> Softmax 'softmax' -> y.
// Intermediates: h1 .. h5; the shape computation's value is 's'.
#pragma once
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kilnrt/error.h"
#include "kilnrt/tensor.h"
#include "onnx_test_writer.h"

namespace kilnrt::enginetest {

inline std::vector<float> pseudo_random(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f);
  }
  return v;
}

// `outputs`: the graph outputs to declare ({"y"} for the model itself, {"h3"} for a truncated one).
inline std::string mlp_model(int64_t in, int64_t hidden, int64_t out, const std::vector<std::string>& outputs) {
  using namespace onnx_test;
  ModelSpec m;
  GraphSpec& g = m.graph;
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), in}));
  g.initializers.push_back(TensorSpec::float_raw("W", {in, hidden}, pseudo_random(in * hidden, 1, 0.5f)));
  g.initializers.push_back(TensorSpec::float_raw("b", {hidden}, pseudo_random(hidden, 2, 0.2f)));
  g.initializers.push_back(TensorSpec::float_raw("W2", {hidden, out}, pseudo_random(hidden * out, 3, 0.5f)));
  g.nodes.push_back(NodeSpec{"MatMul", {"x", "W"}, {"h1"}, {}, "mm"});
  g.nodes.push_back(NodeSpec{"Add", {"h1", "b"}, {"h2"}, {}, "bias_add"});
  g.nodes.push_back(NodeSpec{"Relu", {"h2"}, {"h3"}, {}, "relu"});
  g.nodes.push_back(NodeSpec{"Shape", {"h3"}, {"s"}, {}, "shape"});
  g.nodes.push_back(NodeSpec{"Reshape", {"h3", "s"}, {"h4"}, {}, "reshape"});
  g.nodes.push_back(NodeSpec{"MatMul", {"h4", "W2"}, {"h5"}, {}, "mm2"});
  g.nodes.push_back(NodeSpec{"Softmax", {"h5"}, {"y"}, {AttrSpec::Int("axis", -1)}, "softmax"});
  for (const std::string& o : outputs)
    g.outputs.push_back(ValueInfoSpec::tensor(o, kFloat, {DimSpec::named("batch"), DimSpec::unknown()}));
  return m.serialize();
}

inline std::string write_model(const std::string& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
  return file;
}

inline Tensor random_input(int64_t batch, int64_t in, uint32_t seed) {
  return Tensor::from_vector(pseudo_random(batch * in, seed, 1.0f), DType::kFloat32, {batch, in});
}

// max |a - b| / (max |b| + 1e-12), over every element; shapes must match (else +inf).
inline double relative_error(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != DType::kFloat32 || want.dtype() != DType::kFloat32) return INFINITY;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(got.data<float>()[i]) - double(want.data<float>()[i])));
    scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
  }
  return diff / (scale + 1e-12);
}

// Runs `fn`, expects a kilnrt::Error of `code` whose message contains `text`.
template <typename Fn>
void expect_error(Fn fn, ErrorCode code, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace kilnrt::enginetest
