// ExecutionContext::set_profiling / layer_timings: CPU engines time every node of every run with steady_clock;
// CUDA engines time every device layer with CUDA events and launch directly (no CUDA graphs) while profiling.
// Timings are checked for consistency (counts, per-call vectors, totals, ordering), never for speed.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <string>

#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"

using namespace kilnrt;
using namespace kilnrt::onnx_test;

namespace {

// x[batch, 16] -> Relu -> Sigmoid -> Neg -> Abs -> y: four element-wise nodes no pass folds away on the CPU.
std::string write_chain_model(const std::string& name) {
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 16}));
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"a"}, {}, "relu"});
  m.graph.nodes.push_back(NodeSpec{"Sigmoid", {"a"}, {"b"}, {}, "sigmoid"});
  m.graph.nodes.push_back(NodeSpec{"Neg", {"b"}, {"c"}, {}, "neg"});
  m.graph.nodes.push_back(NodeSpec{"Abs", {"c"}, {"y"}, {}, "abs"});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 16}));
  const std::string path = ::testing::TempDir() + name + ".onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  return path;
}

Tensor ones(const Shape& shape) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f * static_cast<float>(i % 7) - 1.0f;
  return t;
}

// Consistency of one layer's record after `calls` profiled runs.
void expect_consistent(const LayerTiming& t, uint64_t calls) {
  SCOPED_TRACE(t.name);
  EXPECT_EQ(t.calls, calls);
  ASSERT_EQ(t.start_ms.size(), calls);
  ASSERT_EQ(t.duration_ms.size(), calls);
  double sum = 0;
  for (size_t c = 0; c < calls; ++c) {
    EXPECT_GE(t.duration_ms[c], 0.0);
    EXPECT_GE(t.start_ms[c], 0.0);
    if (c) EXPECT_GE(t.start_ms[c], t.start_ms[c - 1] + t.duration_ms[c - 1]);  // runs are sequential
    sum += t.duration_ms[c];
  }
  EXPECT_NEAR(t.total_ms, sum, 1e-9 + 1e-9 * sum);
  EXPECT_NEAR(t.mean_ms, t.total_ms / static_cast<double>(calls), 1e-12 + 1e-9 * t.total_ms);
}

}  // namespace

TEST(BenchProfile, CpuProfilingTimesEveryNodeOfEveryRun) {
  const std::vector<uint8_t> bytes = build_engine(write_chain_model("profile_chain"));
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "chain");
  const std::vector<LayerInfo> layers = engine->layers();
  ASSERT_GE(layers.size(), 2u);
  auto ctx = engine->create_context();
  const std::map<std::string, Tensor> feeds{{"x", ones({3, 16})}};

  // Off by default: runs leave no timings.
  EXPECT_FALSE(ctx->profiling());
  ctx->run(feeds);
  EXPECT_TRUE(ctx->layer_timings().empty());
  EXPECT_EQ(ctx->device_memory_bytes(), 0u);

  ctx->set_profiling(true);
  EXPECT_TRUE(ctx->profiling());
  const Tensor reference = engine->run(feeds).at("y");
  std::map<std::string, Tensor> out;
  for (int i = 0; i < 3; ++i) out = ctx->run(feeds);
  // Profiling does not change results.
  ASSERT_EQ(out.at("y").numel(), reference.numel());
  for (int64_t i = 0; i < reference.numel(); ++i) EXPECT_EQ(out.at("y").data<float>()[i], reference.data<float>()[i]);

  std::vector<LayerTiming> t = ctx->layer_timings();
  ASSERT_EQ(t.size(), layers.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].name, layers[i].name);
    EXPECT_EQ(t[i].op_type, layers[i].op_type);
    EXPECT_EQ(t[i].tactic, layers[i].placement + ":" + layers[i].tactic);
    expect_consistent(t[i], 3);
    // Execution order within each run: a node starts after the previous one ended.
    if (i)
      for (size_t c = 0; c < 3; ++c) EXPECT_GE(t[i].start_ms[c], t[i - 1].start_ms[c] + t[i - 1].duration_ms[c]);
  }

  // Turning it off keeps what was measured and adds nothing.
  ctx->set_profiling(false);
  ctx->run(feeds);
  t = ctx->layer_timings();
  ASSERT_EQ(t.size(), layers.size());
  for (const LayerTiming& l : t) EXPECT_EQ(l.calls, 3u);

  // Turning it on again starts from zero.
  ctx->set_profiling(true);
  EXPECT_TRUE(ctx->layer_timings().empty());
  ctx->run(feeds);
  t = ctx->layer_timings();
  ASSERT_EQ(t.size(), layers.size());
  for (const LayerTiming& l : t) expect_consistent(l, 1);

  // Another context of the same engine is not profiled.
  auto other = engine->create_context();
  other->run(feeds);
  EXPECT_TRUE(other->layer_timings().empty());
}

TEST(BenchProfile, CudaProfilingTimesLayersWithEventsAndLaunchesDirectly) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU: " << why;
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes =
      build_engine(std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.onnx", opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "mobilenet_v3_small");
  const TensorInfo& in = engine->inputs().at(0);
  Shape shape = in.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 2;
  const std::map<std::string, Tensor> feeds{{in.name, ones(shape)}};
  auto ctx = engine->create_context();
  std::map<std::string, Tensor> reference;
  for (int i = 0; i < 3; ++i) reference = ctx->run(feeds);
  EXPECT_EQ(ctx->last_execution_mode(), "graph-replay");
  EXPECT_GT(ctx->device_memory_bytes(), 0u);

  ctx->set_profiling(true);
  std::map<std::string, Tensor> out;
  for (int i = 0; i < 4; ++i) {
    out = ctx->run(feeds);
    EXPECT_EQ(ctx->last_execution_mode(), "direct") << "profiling must launch layers one by one";
  }
  for (const auto& [name, t] : reference) {
    ASSERT_EQ(out.at(name).numel(), t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(out.at(name).data<float>()[i], t.data<float>()[i]) << name;
  }
  const std::vector<LayerTiming> t = ctx->layer_timings();
  ASSERT_GT(t.size(), 10u);
  std::map<std::string, std::string> op_of;
  for (const LayerInfo& l : engine->layers()) op_of[l.name] = l.op_type;
  double sum = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    ASSERT_TRUE(op_of.count(t[i].name)) << t[i].name;
    EXPECT_EQ(t[i].op_type, op_of[t[i].name]);
    EXPECT_EQ(t[i].tactic.rfind("cuda:", 0), 0u) << t[i].tactic;
    expect_consistent(t[i], 4);
    if (i)  // one stream: layers in launch order on the GPU timeline
      for (size_t c = 0; c < 4; ++c) EXPECT_GE(t[i].start_ms[c] + 1e-3, t[i - 1].start_ms[c] + t[i - 1].duration_ms[c]);
    sum += t[i].mean_ms;
  }
  EXPECT_GT(sum, 0.0);

  ctx->set_profiling(false);
  for (int i = 0; i < 2; ++i) ctx->run(feeds);
  EXPECT_EQ(ctx->last_execution_mode(), "graph-replay") << "graphs resume when profiling is off";
  const std::vector<LayerTiming> kept = ctx->layer_timings();  // still readable, nothing added
  ASSERT_EQ(kept.size(), t.size());
  for (const LayerTiming& l : kept) EXPECT_EQ(l.calls, 4u);
}
