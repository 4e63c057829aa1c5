// Engine features on the CPU: per-layer precision overrides (pattern matching, the rules of
// assign_layer_precisions, build errors), mark_all_outputs (each intermediate of the debug engine equals the output
// of a CPU engine of the model truncated there), activation memory (the arena layout, the stored figures, CPU
// engines' answers). The GPU side is in test_cuda_engine_features.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/activation_memory.h"
#include "engine/layer_precision.h"
#include "engine_features_model.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#ifdef KILNRT_HAVE_CUDA
#include "backends/cuda/memory_plan.h"
#endif

using namespace kilnrt;
using namespace kilnrt::enginetest;

namespace {

std::string temp(const std::string& name) { return testing::TempDir() + "/kilnrt_engine_features_" + name; }

std::string mlp_file() { return write_model(temp("mlp.onnx"), mlp_model(8, 16, 4, {"y"})); }

ir::Graph mlp_graph() {
  const std::string bytes = mlp_model(8, 16, 4, {"y"});
  return ir::import_onnx_bytes(bytes.data(), bytes.size(), ".", "mlp.onnx");
}

std::string precision_of(const ir::Graph& g, const std::string& node) {
  for (const ir::Node& n : g.nodes)
    if (n.name == node) return n.has_attr("kilnrt_precision") ? n.attr_string("kilnrt_precision") : "";
  ADD_FAILURE() << "no node " << node;
  return "?";
}

}  // namespace

TEST(EngineFeatures, GlobMatch) {
  EXPECT_TRUE(engine::glob_match("Softmax", "Softmax"));
  EXPECT_FALSE(engine::glob_match("Softmax", "softmax"));
  EXPECT_FALSE(engine::glob_match("Soft", "Softmax"));
  EXPECT_TRUE(engine::glob_match("Soft*", "Softmax"));
  EXPECT_TRUE(engine::glob_match("*max", "Softmax"));
  EXPECT_TRUE(engine::glob_match("*", ""));
  EXPECT_TRUE(engine::glob_match("/enc*/layer.0/*", "/encoder/layer.0/attn/MatMul"));
  EXPECT_FALSE(engine::glob_match("/enc*/layer.0/*", "/encoder/layer.1/attn/MatMul"));
  EXPECT_TRUE(engine::glob_match("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(engine::glob_match("a*b*c", "aXXbYYbcd"));
  EXPECT_TRUE(engine::glob_match("**", "anything"));
}

TEST(EngineFeatures, CudaPrecisionDefaultsAndOverrides) {
  ir::Graph g = mlp_graph();
  BuildOptions o;
  o.fp16 = true;
  o.layer_precisions = {{"Softmax", "fp32"}, {"mm*", "fp16"}, {"mm2", "fp32"}};
  engine::assign_layer_precisions(g, o, /*cuda=*/true);
  EXPECT_EQ(precision_of(g, "softmax"), "fp32");  // by op type
  EXPECT_EQ(precision_of(g, "relu"), "fp16");     // the engine default
  EXPECT_EQ(precision_of(g, "mm"), "fp16");
  EXPECT_EQ(precision_of(g, "mm2"), "fp32");  // a later pattern wins

  // "*=fp32" then a 16-bit layer: a float32 engine apart from that layer, built as a 16-bit one.
  ir::Graph g2 = mlp_graph();
  o.layer_precisions = {{"*", "fp32"}, {"relu", "fp16"}};
  engine::assign_layer_precisions(g2, o, true);
  EXPECT_EQ(precision_of(g2, "relu"), "fp16");
  EXPECT_EQ(precision_of(g2, "mm"), "fp32");
  EXPECT_EQ(precision_of(g2, "softmax"), "fp32");

  // --tf32: GEMMs get tf32, an fp32 override makes one strict.
  ir::Graph g3 = mlp_graph();
  BuildOptions t;
  t.tf32 = true;
  t.layer_precisions = {{"mm2", "fp32"}};
  engine::assign_layer_precisions(g3, t, true);
  EXPECT_EQ(precision_of(g3, "mm"), "tf32");
  EXPECT_EQ(precision_of(g3, "mm2"), "fp32");
  EXPECT_EQ(precision_of(g3, "relu"), "");  // float32 engine: no attribute (fp32)
}

TEST(EngineFeatures, PrecisionErrors) {
  BuildOptions o;
  o.layer_precisions = {{"relu", "fp16"}};
  expect_error(
      [&] {
        ir::Graph g = mlp_graph();
        engine::assign_layer_precisions(g, o, true);
      },
      ErrorCode::kInvalidArgument, "inside a float32 engine is not supported");
  o.fp16 = true;
  o.layer_precisions = {{"relu", "bf16"}};
  expect_error(
      [&] {
        ir::Graph g = mlp_graph();
        engine::assign_layer_precisions(g, o, true);
      },
      ErrorCode::kInvalidArgument, "mixing fp16 and bf16");
  o.layer_precisions = {{"no_such_layer*", "fp32"}};
  expect_error(
      [&] {
        ir::Graph g = mlp_graph();
        engine::assign_layer_precisions(g, o, true);
      },
      ErrorCode::kInvalidArgument, "matches no layer");
  o.layer_precisions = {{"relu", "fp8"}};
  expect_error(
      [&] {
        ir::Graph g = mlp_graph();
        engine::assign_layer_precisions(g, o, false);
      },
      ErrorCode::kInvalidArgument, "unknown precision 'fp8'");
  o.layer_precisions = {{"", "fp32"}};
  expect_error(
      [&] {
        ir::Graph g = mlp_graph();
        engine::assign_layer_precisions(g, o, false);
      },
      ErrorCode::kInvalidArgument, "empty layer pattern");
  // The error names the pattern.
  o.layer_precisions = {{"nothing", "fp32"}};
  try {
    ir::Graph g = mlp_graph();
    engine::assign_layer_precisions(g, o, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.where().find("nothing=fp32"), std::string::npos) << e.where();
  }
}

TEST(EngineFeatures, CpuEngineChecksOverridesAndReportsFp32) {
  const std::string model = mlp_file();
  BuildOptions o;
  o.layer_precisions = {{"nope", "fp32"}};
  expect_error([&] { build_engine(model, o); }, ErrorCode::kInvalidArgument, "matches no layer");
  o.layer_precisions = {{"Softmax", "fp32"}, {"relu", "fp16"}};  // CPU: 16-bit is a warning, as --fp16
  const std::vector<uint8_t> bytes = build_engine(model, o);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  for (const LayerInfo& l : engine->layers()) EXPECT_EQ(l.precision, "fp32") << l.name;
  EXPECT_NE(engine->header().build_options.find("layer_precision:Softmax=fp32"), std::string::npos)
      << engine->header().build_options;
  EXPECT_NE(engine->describe().find("'softmax' [cpu:reference] fp32"), std::string::npos) << engine->describe();
}

TEST(EngineFeatures, MarkAllOutputsMatchesTruncatedModels) {
  BuildOptions o;
  o.mark_all_outputs = true;
  const std::vector<uint8_t> bytes = build_engine(mlp_file(), o);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  std::vector<std::string> names;
  for (const TensorInfo& t : engine->outputs()) names.push_back(t.name);
  // The model's output first, then every data intermediate in node order; not the shape computation 's'.
  EXPECT_EQ(names, (std::vector<std::string>{"y", "h1", "h2", "h3", "h4", "h5"}));
  EXPECT_NE(engine->header().build_options.find("mark_all_outputs=1"), std::string::npos);

  const Tensor x = random_input(3, 8, 7);
  const auto all = engine->run({{"x", x}});
  ASSERT_EQ(all.size(), names.size());
  for (const std::string& name : names) {
    const std::string file = write_model(temp("mlp_" + name + ".onnx"), mlp_model(8, 16, 4, {name}));
    const std::vector<uint8_t> tb = build_engine(file);
    auto truncated = Engine::from_bytes(tb.data(), tb.size());
    ASSERT_EQ(truncated->outputs().size(), 1u);
    const Tensor want = truncated->run({{"x", x}}).at(name);
    const Tensor& got = all.at(name);
    EXPECT_EQ(got.shape(), want.shape()) << name;
    EXPECT_LE(relative_error(got, want), 1e-6) << name;
  }
  // Without the option the engine has the model's output only.
  const std::vector<uint8_t> plain = build_engine(mlp_file());
  EXPECT_EQ(Engine::from_bytes(plain.data(), plain.size())->outputs().size(), 1u);
}

TEST(EngineFeatures, MarkAllOutputsSkipsConstantsAndShapeComputations) {
  ir::Graph g = mlp_graph();
  const auto marked = engine::mark_all_outputs(g);
  EXPECT_EQ(marked, (std::vector<std::string>{"h1", "h2", "h3", "h4", "h5"}));
  for (const std::string& m : marked) EXPECT_NE(m, "s");
  // A value computed from constants only is not a tensor of the run: not marked.
  ir::Graph c = mlp_graph();
  ir::Node n;
  n.name = "const_neg";
  n.op_type = "Neg";
  n.inputs = {"b"};
  n.outputs = {"nb"};
  c.nodes.insert(c.nodes.begin(), n);
  const auto marked2 = engine::mark_all_outputs(c);
  EXPECT_EQ(std::count(marked2.begin(), marked2.end(), "nb"), 0);
}

TEST(EngineFeatures, MarkAllOutputsFollowsOuterScopeReads) {
  // o = If(c constant) { Identity(x) } else { Neg(x) }: the If reads x only through its bodies, yet o is data.
  using namespace onnx_test;
  auto branch = [](const std::string& op, const std::string& out) {
    GraphSpec b;
    b.name = out;
    b.nodes.push_back(NodeSpec{op, {"x"}, {out}});
    b.outputs.push_back(ValueInfoSpec::tensor(out, kFloat, {DimSpec::named("batch"), 4}));
    return b;
  };
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4}));
  m.graph.initializers.push_back(TensorSpec::raw("c", kBool, {}, std::string(1, '\1')));
  m.graph.nodes.push_back(NodeSpec{
      "If",
      {"c"},
      {"o"},
      {AttrSpec::Graph("then_branch", branch("Identity", "t")), AttrSpec::Graph("else_branch", branch("Neg", "e"))},
      "if"});
  m.graph.nodes.push_back(NodeSpec{"Relu", {"o"}, {"y"}, {}, "relu"});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 4}));
  const std::string bytes = m.serialize();
  ir::Graph g = ir::import_onnx_bytes(bytes.data(), bytes.size(), ".", "if.onnx");
  EXPECT_EQ(engine::mark_all_outputs(g), std::vector<std::string>{"o"});
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"y", "o"}));
}

TEST(EngineFeatures, CpuEngineActivationMemory) {
  const std::vector<uint8_t> bytes = build_engine(mlp_file());
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(engine->activation_memory_size(), 0u);
  EXPECT_TRUE(engine->activation_memory_sizes().empty());
  auto ctx = engine->create_context(ContextOptions{false});  // CPU contexts have no device memory to provide
  int dummy = 0;
  expect_error([&] { ctx->set_activation_memory(&dummy, 1024); }, ErrorCode::kUnsupported, "runs on the CPU");
  const Tensor x = random_input(2, 8, 3);
  EXPECT_LE(relative_error(ctx->run({{"x", x}}).at("y"), engine->run({{"x", x}}).at("y")), 0.0);
}

TEST(EngineFeatures, ProfileMaxShapes) {
  TensorInfo x;
  x.name = "x";
  x.shape = {-1, 8};
  TensorInfo m;
  m.name = "m";
  m.shape = {2, 3};
  InputProfile small{"x", {1, 8}, {2, 8}, {4, 8}}, big{"x", {8, 8}, {16, 8}, {32, 8}};
  const engine::MaxShapes p = engine::profile_max_shapes({x, m}, {{small}, {big}});
  ASSERT_EQ(p.shapes.size(), 2u);
  EXPECT_EQ(p.shapes[0], (std::vector<Shape>{{4, 8}, {2, 3}}));
  EXPECT_EQ(p.shapes[1], (std::vector<Shape>{{32, 8}, {2, 3}}));
  EXPECT_TRUE(p.bounded[0] && p.bounded[1]);
  const engine::MaxShapes none = engine::profile_max_shapes({x, m}, {});
  ASSERT_EQ(none.shapes.size(), 1u);
  EXPECT_FALSE(none.bounded[0]);  // x's batch is dynamic without a profile
  EXPECT_TRUE(engine::profile_max_shapes({m}, {}).bounded[0]);
}

TEST(EngineFeatures, ActivationMemoryBlob) {
  const std::vector<int64_t> v = {0, 256, int64_t(5) << 30, -1};
  EXPECT_EQ(engine::decode_activation_memory(engine::encode_activation_memory(v), "e"), v);
  std::vector<uint8_t> bad = engine::encode_activation_memory(v);
  bad.pop_back();
  expect_error([&] { engine::decode_activation_memory(bad, "e"); }, ErrorCode::kInvalidEngine, "entries");
  expect_error([&] { engine::decode_activation_memory({1, 2}, "e"); }, ErrorCode::kInvalidEngine, "shorter");
  std::vector<uint8_t> negative = engine::encode_activation_memory({-5});
  expect_error([&] { engine::decode_activation_memory(negative, "e"); }, ErrorCode::kInvalidEngine, "-5 bytes");
}

#ifdef KILNRT_HAVE_CUDA
using backends::cuda::ArenaItem;
using backends::cuda::kArenaAlignment;
using backends::cuda::layout_arena;

TEST(EngineFeatures, ArenaLayoutReusesDeadBuffers) {
  // a: steps 0-1, b: 1-2 (overlaps a), c: 3-4 (a and b are dead: reuses offset 0).
  const auto l = layout_arena({{0, 1, 1000}, {1, 2, 300}, {3, 4, 1200}});
  EXPECT_EQ(l.offsets[0], 0u);
  EXPECT_EQ(l.offsets[1], 1024u);  // after a, aligned
  EXPECT_EQ(l.offsets[2], 0u);
  EXPECT_EQ(l.bytes, 1536u);
  // Zero-byte items still get their own aligned unit; an empty list needs nothing.
  const auto z = layout_arena({{0, 0, 0}, {0, 0, 0}});
  EXPECT_NE(z.offsets[0], z.offsets[1]);
  EXPECT_EQ(z.bytes, 2 * kArenaAlignment);
  EXPECT_EQ(layout_arena({}).bytes, 0u);
}

TEST(EngineFeatures, ArenaLayoutNeverOverlapsLiveBuffers) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaItem> items;
    const int n = 1 + static_cast<int>(rng() % 40);
    size_t sum = 0;
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 30);
      items.push_back({first, first + static_cast<int>(rng() % 10), rng() % 5000});
      sum += (std::max<size_t>(1, items.back().bytes) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    }
    const auto l = layout_arena(items);
    ASSERT_LE(l.bytes, sum);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(l.offsets[i] % kArenaAlignment, 0u);
      EXPECT_LE(l.offsets[i] + std::max<size_t>(1, items[i].bytes), l.bytes);
      for (int j = i + 1; j < n; ++j) {
        const bool live_together = items[i].first <= items[j].last && items[j].first <= items[i].last;
        const bool overlap = l.offsets[i] < l.offsets[j] + std::max<size_t>(1, items[j].bytes) &&
                             l.offsets[j] < l.offsets[i] + std::max<size_t>(1, items[i].bytes);
        EXPECT_FALSE(live_together && overlap) << "trial " << trial << " items " << i << ", " << j;
      }
    }
  }
}
#else
TEST(EngineFeatures, ArenaLayout) { GTEST_SKIP() << "this build has no CUDA backend (memory_plan.cc is not built)"; }
#endif
