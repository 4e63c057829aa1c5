// Models shared by the failure-injection tests (test_failure_injection.cc, test_cuda_failure_injection.cc).
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kilnrt/npy.h"
#include "kilnrt/tensor.h"
#include "onnx_test_writer.h"

namespace kilnrt::fitest {

inline std::vector<float> random_floats(size_t n, unsigned seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// x[batch,3,12,12] -> conv3x3(8)+BN+Relu -> conv3x3(8)+BN, + residual -> Relu -> MaxPool 2 -> GAP -> Flatten
// -> Gemm(5); a second output reshapes x through a Shape chain to [batch, 432].
inline std::string small_cnn_path() {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.opsets = {{"", 13}};
  GraphSpec& g = m.graph;
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 3, 12, 12}));
  g.initializers.push_back(TensorSpec::float_raw("w0", {8, 3, 3, 3}, random_floats(8 * 27, 1)));
  g.initializers.push_back(TensorSpec::float_raw("b0", {8}, random_floats(8, 2)));
  g.initializers.push_back(TensorSpec::float_raw("w1", {8, 8, 3, 3}, random_floats(8 * 72, 3, 0.2f)));
  g.initializers.push_back(TensorSpec::float_raw("proj", {8, 3, 1, 1}, random_floats(24, 4)));
  for (int bn = 0; bn < 2; ++bn) {
    const std::string p = "bn" + std::to_string(bn) + "_";
    g.initializers.push_back(TensorSpec::float_raw(p + "scale", {8}, random_floats(8, 10 + bn, 1.0f)));
    g.initializers.push_back(TensorSpec::float_raw(p + "bias", {8}, random_floats(8, 20 + bn)));
    g.initializers.push_back(TensorSpec::float_raw(p + "mean", {8}, random_floats(8, 30 + bn)));
    std::vector<float> var = random_floats(8, 40 + bn);
    for (float& v : var) v = v * v + 0.5f;
    g.initializers.push_back(TensorSpec::float_raw(p + "var", {8}, var));
  }
  g.initializers.push_back(TensorSpec::float_raw("fc_w", {5, 8}, random_floats(40, 5)));
  g.initializers.push_back(TensorSpec::float_raw("fc_b", {5}, random_floats(5, 6)));
  g.initializers.push_back(TensorSpec::int64_typed("idx0", {1}, {0}));
  g.initializers.push_back(TensorSpec::int64_typed("minus1", {1}, {-1}));
  const std::vector<int64_t> pads = {1, 1, 1, 1};
  g.nodes.push_back(NodeSpec{"Conv", {"x", "w0", "b0"}, {"c0"}, {AttrSpec::Ints("pads", pads)}});
  g.nodes.push_back(NodeSpec{"BatchNormalization", {"c0", "bn0_scale", "bn0_bias", "bn0_mean", "bn0_var"}, {"n0"}});
  g.nodes.push_back(NodeSpec{"Relu", {"n0"}, {"r0"}});
  g.nodes.push_back(NodeSpec{"Conv", {"r0", "w1"}, {"c1"}, {AttrSpec::Ints("pads", pads)}});
  g.nodes.push_back(NodeSpec{"BatchNormalization", {"c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"}, {"n1"}});
  g.nodes.push_back(NodeSpec{"Conv", {"x", "proj"}, {"skip"}});
  g.nodes.push_back(NodeSpec{"Add", {"n1", "skip"}, {"sum"}});
  g.nodes.push_back(NodeSpec{"Relu", {"sum"}, {"r1"}});
  g.nodes.push_back(
      NodeSpec{"MaxPool", {"r1"}, {"mp"}, {AttrSpec::Ints("kernel_shape", {2, 2}), AttrSpec::Ints("strides", {2, 2})}});
  g.nodes.push_back(NodeSpec{"GlobalAveragePool", {"mp"}, {"gap"}});
  g.nodes.push_back(NodeSpec{"Flatten", {"gap"}, {"flat"}});
  g.nodes.push_back(NodeSpec{"Gemm", {"flat", "fc_w", "fc_b"}, {"y"}, {AttrSpec::Int("transB", 1)}});
  g.nodes.push_back(NodeSpec{"Shape", {"x"}, {"xs"}});
  g.nodes.push_back(NodeSpec{"Gather", {"xs", "idx0"}, {"n"}, {AttrSpec::Int("axis", 0)}});
  g.nodes.push_back(NodeSpec{"Concat", {"n", "minus1"}, {"ns"}, {AttrSpec::Int("axis", 0)}});
  g.nodes.push_back(NodeSpec{"Reshape", {"x", "ns"}, {"flat_x"}});
  g.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 5}));
  g.outputs.push_back(ValueInfoSpec::tensor("flat_x", kFloat, {DimSpec::named("batch"), 432}));
  const std::string path = testing::TempDir() + "kilnrt_fi_small_cnn.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  return path;
}

inline std::string transformer_path() {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/transformer_encoder_layer.onnx";
}

inline std::string mobilenet_path() {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.onnx";
}

// Inputs for one of the models above (a batch of 2 for the CNN, the fixture's input for the transformer).
inline std::map<std::string, Tensor> inputs_for(const std::string& model) {
  if (model == transformer_path())
    return {
        {"x", load_npy(std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/transformer_encoder_layer.input.npy")}};
  if (model == mobilenet_path())
    return {{"x", load_npy(std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.input.npy")}};
  const std::vector<float> x = random_floats(2 * 3 * 12 * 12, 7, 1.0f);
  return {{"x", Tensor::from_data(x.data(), DType::kFloat32, {2, 3, 12, 12})}};
}

}  // namespace kilnrt::fitest
