// Storage layout chosen at build by timing both whole plans (backends/cuda/layout_timing.h): the policy
// (env, then the recorded choice, then the prediction), the record on the conv nodes, when timing is skipped; on a
// GPU: the choice recorded and honoured at load, KILNRT_CUDA_NHWC overriding it, an engine without the record
// falling back to the prediction, and equal outputs in both layouts against the CPU reference. GPU tests skip with a
// message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "ops/cuda/tactic_timing.h"
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/layout_timing.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "engine/engine_file.h"
#include "kilnrt/engine.h"
#include "passes/optimize.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;
namespace bc = kilnrt::backends::cuda;

namespace {

using EnvVar = kilnrt::cudatest::ScopedEnv;  // sets (or unsets) a variable for one scope, then restores it

// x -> conv 3x3 + relu (r0) -> conv 3x3 + residual r0 + relu -> conv 3x3 -> y: with NHWC storage the middle layers
// read and write NHWC.
ir::Graph model(bool dynamic_batch = false) {
  GraphBuilder b;
  b.input("x", {2, 16, 12, 12});
  if (dynamic_batch) b.g.types["x"].shape[0] = ir::Dim::symbol("batch");
  b.conv("x", "c0", 16, 32, 3, 1, true);
  b.node("Relu", {"c0"}, {"r0"});
  b.conv("r0", "c1", 32, 32, 3, 1, true);
  b.node("Add", {"c1", "r0"}, {"s1"});
  b.node("Relu", {"s1"}, {"r1"});
  b.conv("r1", "y", 32, 8, 3, 1, true);
  b.output("y");
  return b.finish();
}

ir::Graph fp16(const ir::Graph& original) {
  ir::Graph g = original;
  passes::optimize_graph(g);
  for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr("fp16");
  return g;
}

// Whether the plan of `g` (as loaded, no timing) runs some layer NHWC. `image`: an engine file's device weights.
bool plan_runs_nhwc(const ir::Graph& g, const engine::DeviceWeightImage* image = nullptr) {
  kilnrt::cuda::ContextGuard guard(0);
  bc::CudaPlan plan(g, 0, image);
  for (const auto& [node, tactic] : plan.tactics())
    if (tactic.find("+nhwc") != std::string::npos) return true;
  return false;
}

int conv_nodes(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.op_type == "Conv" || node.op_type == "FusedConv";
  return n;
}

int recorded_nodes(const ir::Graph& g, const std::string& layout) {
  int n = 0;
  for (const ir::Node& node : g.nodes)
    n += node.has_attr(bc::kLayoutAttr) && node.attr_string(bc::kLayoutAttr) == layout;
  return n;
}

}  // namespace

TEST(CudaLayoutPolicy, EnvBeatsRecordBeatsPrediction) {
  struct Case {
    const char* env;
    const char* record;
    bool sync;
    bool plan, forced;
    std::string source;
  };
  const Case cases[] = {
      {nullptr, "", false, true, false, "prediction"},  // engines built before the record
      {nullptr, "nhwc", false, true, true, "record"},
      {nullptr, "nchw", false, false, false, "record"},
      {nullptr, "junk", false, true, false, "prediction"},  // an unknown record is no record
      {"0", "nhwc", false, false, false, "env"},
      {"1", "nchw", false, true, true, "env"},
      {"1", "", false, true, true, "env"},
      {"yes", "nchw", false, false, false, "record"},    // only 0 / 1 force
      {"1", "nhwc", true, false, false, "sync-points"},  // segmented runs stay NCHW whatever is asked
      {nullptr, "nhwc", true, false, false, "sync-points"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string("env ") + (c.env ? c.env : "unset") + " record '" + c.record + "' sync " +
                 std::to_string(c.sync));
    const bc::LayoutPolicy p = bc::layout_policy(c.env, c.record, c.sync);
    EXPECT_EQ(p.plan, c.plan);
    EXPECT_EQ(p.forced, c.forced);
    EXPECT_EQ(std::string(p.source), c.source);
  }
}

TEST(CudaLayoutPolicy, RecordLivesOnTheConvNodes) {
  ir::Graph g = model();
  EXPECT_EQ(bc::recorded_layout(g), "");
  bc::set_recorded_layout(g, "nhwc");
  EXPECT_EQ(bc::recorded_layout(g), "nhwc");
  EXPECT_EQ(recorded_nodes(g, "nhwc"), 3);
  EXPECT_EQ(conv_nodes(g), 3);
  for (const ir::Node& n : g.nodes) EXPECT_EQ(n.has_attr(bc::kLayoutAttr), n.op_type == "Conv") << n.name;
  bc::set_recorded_layout(g, "nchw");
  EXPECT_EQ(bc::recorded_layout(g), "nchw");
  bc::set_recorded_layout(g, "");
  EXPECT_EQ(bc::recorded_layout(g), "");
  g.nodes[0].attrs[bc::kLayoutAttr] = string_attr("sideways");  // a damaged record reads as none
  EXPECT_EQ(bc::recorded_layout(g), "");
  // After the passes: FusedConv nodes (domain com.kilnrt) carry it too.
  ir::Graph f = fp16(model());
  int fused = 0;
  for (const ir::Node& n : f.nodes) fused += n.op_type == "FusedConv";
  ASSERT_GE(fused, 2);
  bc::set_recorded_layout(f, "nhwc");
  EXPECT_EQ(recorded_nodes(f, "nhwc"), conv_nodes(f));
  EXPECT_EQ(bc::recorded_layout(f), "nhwc");
}

TEST(CudaLayoutPolicy, TimingOnlyForStatic16BitConvGraphs) {
  EnvVar nhwc("KILNRT_CUDA_NHWC", nullptr), off("KILNRT_CUDA_LAYOUT_TIMING", nullptr);
  EXPECT_EQ(bc::layout_timing_skip_reason(fp16(model())), "");
  EXPECT_NE(bc::layout_timing_skip_reason(model()).find("16-bit"), std::string::npos);  // float32 engine
  {
    GraphBuilder b;  // no conv
    b.input("x", {2, 8});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    EXPECT_EQ(bc::layout_timing_skip_reason(fp16(b.finish())), "no convolution");
  }
  // A dynamic batch: the prediction decides at load.
  EXPECT_NE(bc::layout_timing_skip_reason(fp16(model(true))).find("dynamic shape of input 'x'"), std::string::npos);
  {
    EnvVar forced("KILNRT_CUDA_NHWC", "1");
    EXPECT_NE(bc::layout_timing_skip_reason(fp16(model())).find("forces"), std::string::npos);
  }
  {
    EnvVar no("KILNRT_CUDA_LAYOUT_TIMING", "0");
    EXPECT_EQ(bc::layout_timing_skip_reason(fp16(model())), "KILNRT_CUDA_LAYOUT_TIMING=0");
  }
}

// The builder's timing records the faster layout on every conv node; a plan built from the graph runs it; the
// environment overrides it; without a record the prediction decides.
TEST(CudaLayoutTiming, ChoiceRecordedHonouredAndOverridden) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar nhwc("KILNRT_CUDA_NHWC", nullptr), off("KILNRT_CUDA_LAYOUT_TIMING", nullptr);
  ir::Graph g = fp16(model());
  std::map<std::string, std::string> timed;
  const bc::LayoutTimingResult r = bc::choose_layout_by_timing(g, 0, &timed);
  ASSERT_TRUE(r.layout == "nhwc" || r.layout == "nchw") << r.note;
  EXPECT_GT(r.nhwc_ms, 0) << r.note;
  EXPECT_GT(r.nchw_ms, 0) << r.note;
  EXPECT_EQ(r.layout == "nhwc", r.nhwc_ms < r.nchw_ms) << r.note;
  EXPECT_EQ(bc::recorded_layout(g), r.layout);
  EXPECT_EQ(recorded_nodes(g, r.layout), conv_nodes(g));
  EXPECT_EQ(plan_runs_nhwc(g), r.layout == "nhwc");
  for (const char* record : {"nhwc", "nchw"}) {
    SCOPED_TRACE(record);
    bc::set_recorded_layout(g, record);
    EXPECT_EQ(plan_runs_nhwc(g), std::string(record) == "nhwc") << "the record is honoured at load";
    {
      EnvVar forced("KILNRT_CUDA_NHWC", "0");
      EXPECT_FALSE(plan_runs_nhwc(g)) << "KILNRT_CUDA_NHWC=0 beats the record";
    }
    {
      EnvVar forced("KILNRT_CUDA_NHWC", "1");
      EXPECT_TRUE(plan_runs_nhwc(g)) << "KILNRT_CUDA_NHWC=1 beats the record";
    }
  }
  {
    EnvVar forced("KILNRT_CUDA_NHWC", "1");  // forced at build: nothing timed, nothing recorded
    ir::Graph h = fp16(model());
    const bc::LayoutTimingResult none = bc::choose_layout_by_timing(h, 0, nullptr);
    EXPECT_EQ(none.layout, "");
    EXPECT_EQ(bc::recorded_layout(h), "");
  }
}

// Both layouts compute the same thing: each against the CPU reference of the unoptimised float32 graph, and against
// each other.
TEST(CudaLayoutTiming, OutputsEqualInBothLayoutsAndOnCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar nhwc("KILNRT_CUDA_NHWC", nullptr);
  const ir::Graph original = model();
  ir::Graph g = fp16(original);
  std::map<std::string, Tensor> feeds;
  feeds["x"] = random_tensor({2, 16, 12, 12}, 5, -1.f, 1.f);
  const Tensor want = cudatest::run_cpu(original, feeds).at("y");
  std::map<std::string, Tensor> got;
  for (const char* record : {"nhwc", "nchw"}) {
    SCOPED_TRACE(record);
    bc::set_recorded_layout(g, record);
    ASSERT_EQ(plan_runs_nhwc(g), std::string(record) == "nhwc");
    got[record] = cudatest::run_cuda(g, feeds).at("y");
    cudatest::expect_tensors_close(got[record], want, 0.12, 0.06);  // three fp16 convolutions deep
  }
  cudatest::expect_tensors_close(got["nhwc"], got["nchw"], 0.06, 0.03);
}

// build_engine stores the choice with the nodes; the loaded engine runs it; an engine without the record (built
// before it) falls back to the prediction, which keeps mobilenet_v3_small at batch 2 NCHW (depthwise convs below
// kFastDepthwiseMinBatch).
TEST(CudaLayoutTiming, EngineFileKeepsChoiceAndOldEnginesPredict) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar nhwc("KILNRT_CUDA_NHWC", nullptr), off("KILNRT_CUDA_LAYOUT_TIMING", nullptr);
  const std::string onnx = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.onnx";
  BuildOptions o;
  o.device = "cpu";
  o.profiles = {{{"x", {2, 3, 224, 224}, {2, 3, 224, 224}, {2, 3, 224, 224}}}};
  const std::vector<uint8_t> cpu_bytes = build_engine(onnx, o);
  o.device = "cuda";
  o.fp16 = true;
  const std::vector<uint8_t> bytes = build_engine(onnx, o);
  engine::LoadedEngine e = engine::deserialize_engine(bytes.data(), bytes.size(), "gpu");
  const std::string layout = bc::recorded_layout(e.graph);
  ASSERT_TRUE(layout == "nhwc" || layout == "nchw");
  EXPECT_EQ(recorded_nodes(e.graph, layout), conv_nodes(e.graph));
  bool shown_nhwc = false;
  for (const auto& [node, t] : e.meta.layer_tactics) shown_nhwc |= t.find("+nhwc") != std::string::npos;
  EXPECT_EQ(shown_nhwc, layout == "nhwc") << "the builder's own plan runs the recorded layout";
  EXPECT_EQ(plan_runs_nhwc(e.graph, &e.device_weights), layout == "nhwc");

  // Both engines run; their outputs agree with the CPU engine's.
  Tensor x = Tensor::empty(DType::kFloat32, {2, 3, 224, 224});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  auto run = [&](const std::vector<uint8_t>& b) {
    auto engine = Engine::from_bytes(b.data(), b.size(), "<memory>", 0);
    const auto out = engine->run({{engine->inputs()[0].name, x}});
    const Tensor& y = out.begin()->second;
    return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
  };
  const std::vector<float> ref = run(cpu_bytes), got = run(bytes);
  ASSERT_EQ(got.size(), ref.size());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    dot += double(ref[i]) * got[i];
    na += double(ref[i]) * ref[i];
    nb += double(got[i]) * got[i];
  }
  EXPECT_GT(dot / std::sqrt(na * nb), 0.999);

  // An old engine: no record -> the prediction (NCHW here); a record of the other kind flips it.
  bc::set_recorded_layout(e.graph, "");
  EXPECT_FALSE(plan_runs_nhwc(e.graph, &e.device_weights)) << "prediction: NCHW (slow depthwise convs at batch 2)";
  bc::set_recorded_layout(e.graph, "nhwc");
  EXPECT_TRUE(plan_runs_nhwc(e.graph, &e.device_weights));

  // KILNRT_CUDA_NHWC at build: no timing, no record (the variable decides at load as before).
  EnvVar forced("KILNRT_CUDA_NHWC", "0");
  const std::vector<uint8_t> forced_bytes = build_engine(onnx, o);
  EXPECT_EQ(bc::recorded_layout(engine::deserialize_engine(forced_bytes.data(), forced_bytes.size(), "gpu").graph), "");
}
