// Data-dependent shapes on the CUDA backend: NonZero / Compress layers and plans with sync points
// (runner_segments.cc) against the CPU reference — chains after a data-dependent op, device values read on the host
// (Reshape shape, Range limits, TopK k, ConstantOfShape shape), one runner called with inputs of different counts,
// the refusal of a caller's capture, and a plan without sync points still capturing its CUDA graph. GPU tests skip
// with a message without a GPU.
#include <cmath>
#include <fstream>
#include <limits>

#include "cuda_backend_test_util.h"
#include "dd_test_graph.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

using backends::cuda::CudaPlan;
using backends::cuda::CudaRunner;
using ddtest::Net;
namespace kc = kilnrt::cuda;

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
Tensor boolean(const std::vector<uint8_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kBool, s); }

// Random float32 data where every `every`-th element (from `phase`) is zero.
Tensor sparse(const Shape& s, uint32_t seed, int every, int phase) {
  Tensor t = random_tensor(s, seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (i % every == phase) t.data<float>()[i] = 0.f;
  return t;
}

void expect_same(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE("output " + name);
    expect_tensors_close(got.at(name), t, 1e-6, 1e-6);
  }
}

// x [6, 7] -> NonZero -> row 1 (column indices) -> Gather(x, cols, axis 1) -> Relu; outputs the Relu and NonZero.
Net nonzero_chain(const Tensor& x) {
  Net net;
  net.input("x", x);
  net.constant("one", i64({1}, {}));
  net.node("NonZero", "nz", {"x"}, {"idx"});
  ddtest::set_int(net.node("Gather", "cols", {"idx", "one"}, {"c"}), "axis", 0);
  ddtest::set_int(net.node("Gather", "pick", {"x", "c"}, {"g"}), "axis", 1);
  net.node("Relu", "relu", {"g"}, {"y"});
  net.output("y").output("idx");
  net.done();
  return net;
}

TEST(CudaDataDependent, NonZeroMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  compare_node(Op("NonZero", 1).node, {f32({0.f, -0.f, 1.f, nan, 0.f, -2.f}, {2, 3})});
  compare_node(Op("NonZero", 1).node, {sparse({50, 50}, 1, 3, 0)});  // 2500 elements: several scan tiles
  compare_node(Op("NonZero", 1).node, {sparse({4, 5, 6}, 2, 2, 1)});
  compare_node(Op("NonZero", 1).node, {i64({0, 3, 0, -1, 0, 0, 9}, {7})});
  compare_node(Op("NonZero", 1).node, {boolean({1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1}, {3, 4})});
  compare_node(Op("NonZero", 1).node, {f32({2.5f}, {})});                      // scalar: [1, 1]
  compare_node(Op("NonZero", 1).node, {Tensor::zeros(DType::kFloat32, {8})});  // no hit: [1, 0]
}

TEST(CudaDataDependent, CompressMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({5, 3}, 3);
  compare_node(Op("Compress", 2).i("axis", 0).node, {x, boolean({1, 0, 1, 1, 0}, {5})});
  compare_node(Op("Compress", 2).i("axis", 1).node, {x, boolean({0, 1}, {2})});  // shorter condition
  compare_node(Op("Compress", 2).i("axis", -1).node, {x, boolean({1, 0, 1}, {3})});
  compare_node(Op("Compress", 2).node, {x, boolean({1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0}, {15})});
  compare_node(Op("Compress", 2).i("axis", 0).node, {x, boolean({0, 0, 0, 0, 0}, {5})});  // empty result
  compare_node(Op("Compress", 2).i("axis", 0).node, {i64({1, 2, 3, 4, 5, 6}, {3, 2}), boolean({0, 1, 1}, {3})});
}

TEST(CudaDataDependent, UniqueMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor flat = f32({2.f, 1.f, 1.f, 3.f, 4.f, 3.f, -0.f, 0.f, 2.f}, {9});
  compare_node(Op("Unique", 1, 4).node, {flat}, {}, 11);
  compare_node(Op("Unique", 1, 4).i("sorted", 0).node, {flat}, {}, 11);
  compare_node(Op("Unique", 1, 1).node, {i64({5, -1, 5, 7, -1, 0}, {2, 3})}, {}, 11);  // Y only, flattened
  const Tensor rows = f32({1, 0, 0, 1, 0, 0, 2, 3, 4, 2, 3, 4, 0, 0, 1}, {5, 3});
  compare_node(Op("Unique", 1, 4).i("axis", 0).node, {rows}, {}, 11);
  compare_node(Op("Unique", 1, 4).i("axis", 0).i("sorted", 0).node, {rows}, {}, 11);
  compare_node(Op("Unique", 1, 4).i("axis", -1).node, {f32({1, 1, 0, 2, 2, 1, 0, 2}, {2, 4})}, {}, 11);
  // Many repeats over several blocks of the pairwise kernels.
  std::vector<int64_t> many(3000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>((i * 7919) % 97) - 40;
  compare_node(Op("Unique", 1, 4).node, {i64(many, {3000})}, {}, 11);
}

TEST(CudaDataDependent, NonMaxSuppressionMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  // The ONNX documentation's example: boxes 3, 0, 5 are kept (corner format).
  const Tensor boxes = f32(
      {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}, {1, 6, 4});
  const Tensor scores = f32({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  const std::vector<bool> consts = {false, false, true, true, true};
  const ir::Node nms = Op("NonMaxSuppression", 5).node;
  compare_node(nms, {boxes, scores, i64({3}, {1}), f32({0.5f}, {1}), f32({0.f}, {1})}, consts, 11);
  {
    OneNode one(nms, {boxes, scores, i64({3}, {1}), f32({0.5f}, {1}), f32({0.f}, {1})}, consts, 11);
    const Tensor got = run_cuda(one.g, one.feeds).at("out0");
    ASSERT_EQ(got.shape(), (Shape{3, 3}));
    const std::vector<int64_t> want = {0, 0, 3, 0, 0, 0, 0, 0, 5};
    EXPECT_EQ(std::vector<int64_t>(got.data<int64_t>(), got.data<int64_t>() + 9), want);
  }
  compare_node(nms, {boxes, scores, i64({2}, {1}), f32({0.5f}, {1}), f32({0.f}, {1})}, consts, 11);    // max 2
  compare_node(nms, {boxes, scores, i64({0}, {1}), f32({0.5f}, {1}), f32({0.f}, {1})}, consts, 11);    // none
  compare_node(nms, {boxes, scores, i64({10}, {1}), f32({0.5f}, {1}), f32({0.4f}, {1})}, consts, 11);  // threshold
  // center_point_box 1: the same boxes as (x_center, y_center, width, height).
  const Tensor centers = f32(
      {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 0.4f, 1, 1, 0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1},
      {1, 6, 4});
  compare_node(Op("NonMaxSuppression", 5).i("center_point_box", 1).node,
               {centers, scores, i64({3}, {1}), f32({0.5f}, {1}), f32({0.f}, {1})}, consts, 11);
  // Two batches, three classes, random boxes with overlaps.
  Tensor rb = random_tensor({2, 40, 4}, 13, 0.f, 10.f);
  compare_node(nms, {rb, random_tensor({2, 3, 40}, 14, 0.f, 1.f), i64({5}, {1}), f32({0.3f}, {1}), f32({0.2f}, {1})},
               consts, 11);
}

TEST(CudaDataDependent, NonZeroGatherChainMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  Net net = nonzero_chain(sparse({6, 7}, 4, 4, 2));
  CudaSession s(net.g);
  EXPECT_EQ(s.plan.sync_points(), 1);
  expect_same(s.run(net.feeds), run_cpu(net.g, net.feeds));
  EXPECT_EQ(s.runner.sync_count(), 1u);
  EXPECT_EQ(s.runner.last_mode(), CudaRunner::Mode::kDirect);
  // The value pool (one 16 MiB chunk at least) is counted with the workspace.
  EXPECT_GE(s.runner.device_memory_bytes(), backends::cuda::kWorkspaceBytes + (size_t(16) << 20));
}

TEST(CudaDataDependent, ProfilingTimesTheLayersOfASegmentedRun) {
  KILNRT_SKIP_WITHOUT_GPU();
  Net net = nonzero_chain(sparse({6, 7}, 15, 3, 2));
  CudaSession s(net.g);
  s.runner.set_profiling(true);
  for (int i = 0; i < 2; ++i) expect_same(s.run(net.feeds), run_cpu(net.g, net.feeds));
  const std::vector<LayerTiming> timings = s.runner.layer_timings();
  ASSERT_EQ(timings.size(), s.plan.graph().nodes.size());
  for (size_t i = 0; i < timings.size(); ++i) {
    SCOPED_TRACE(s.plan.graph().nodes[i].name);
    EXPECT_EQ(timings[i].calls, 2u);  // NonZero, both Gathers and Relu are device layers
    EXPECT_GE(timings[i].total_ms, 0.0);
  }
}

TEST(CudaDataDependent, OneRunnerWithDifferentCounts) {
  KILNRT_SKIP_WITHOUT_GPU();
  Net net = nonzero_chain(sparse({6, 7}, 5, 2, 0));
  CudaSession s(net.g);
  const Tensor dense = sparse({6, 7}, 6, 1000, 999);  // no zero
  const Tensor few = sparse({6, 7}, 7, 1, 0);         // all zero but what we set below
  Tensor some = few.clone();
  some.data<float>()[3] = 1.5f;
  some.data<float>()[40] = -2.f;
  std::vector<int64_t> counts;
  for (const Tensor& x : {net.feeds.at("x"), dense, some, few, net.feeds.at("x")}) {
    std::map<std::string, Tensor> feeds{{"x", x}};
    const auto got = s.run(feeds);
    expect_same(got, run_cpu(net.g, feeds));
    counts.push_back(got.at("idx").shape().at(1));
  }
  EXPECT_EQ(counts[0], 21);
  EXPECT_EQ(counts[1], 42);
  EXPECT_EQ(counts[2], 2);
  EXPECT_EQ(counts[3], 0);
  EXPECT_EQ(counts[4], 21);
  EXPECT_EQ(s.runner.sync_count(), 5u);  // one sync point per run
  EXPECT_EQ(s.runner.stats().captures, 0u);
}

TEST(CudaDataDependent, ReshapeWithDeviceComputedShape) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{-1, 3}}) {
    Net net;
    net.input("x", random_tensor({2, 6}, 8));
    net.input("s", i64(shape, {2}));
    net.constant("zero", i64({0, 0}, {2}));
    net.node("Add", "shape_on_gpu", {"s", "zero"}, {"s2"});
    net.node("Reshape", "rs", {"x", "s2"}, {"r"});
    net.node("Relu", "relu", {"r"}, {"y"});
    net.output("y");
    net.done();
    CudaSession s(net.g);
    EXPECT_EQ(s.plan.sync_points(), 1);
    const auto got = s.run(net.feeds);
    expect_same(got, run_cpu(net.g, net.feeds));
    EXPECT_EQ(got.at("y").shape(), (Shape{shape[0] < 0 ? 4 : 3, shape[1]}));
  }
}

TEST(CudaDataDependent, RangeAndConstantOfShapeFromDeviceValues) {
  KILNRT_SKIP_WITHOUT_GPU();
  {
    Net net;
    net.input("a", f32({1.f}, {}));
    net.input("b", f32({7.5f}, {}));
    net.input("d", f32({1.5f}, {}));
    net.constant("two", f32({2.f}, {}));
    net.node("Range", "range", {"a", "b", "d"}, {"r"});
    net.node("Mul", "twice", {"r", "two"}, {"y"});
    net.output("y");
    net.done();
    const auto got = run_cuda(net.g, net.feeds);
    expect_same(got, run_cpu(net.g, net.feeds));
    EXPECT_EQ(got.at("y").shape(), (Shape{5}));
  }
  {
    Net net;
    net.input("a", i64({10}, {}));
    net.input("b", i64({0}, {}));
    net.input("d", i64({-3}, {}));
    net.node("Range", "range", {"a", "b", "d"}, {"y"});
    net.output("y");
    net.done();
    expect_same(run_cuda(net.g, net.feeds), run_cpu(net.g, net.feeds));
  }
  {
    Net net;
    net.input("s", i64({2, 3}, {2}));
    net.input("x", random_tensor({2, 3}, 9));
    net.node("ConstantOfShape", "fill", {"s"}, {"z"});
    net.node("Add", "add", {"z", "x"}, {"y"});
    net.output("y").output("z");
    net.done();
    expect_same(run_cuda(net.g, net.feeds), run_cpu(net.g, net.feeds));
  }
}

TEST(CudaDataDependent, TopKWithDeviceK) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (int64_t k : {1, 4, 10}) {
    Net net;
    net.input("x", random_tensor({3, 10}, 10));
    net.input("k", i64({k}, {1}));
    net.node("TopK", "topk", {"x", "k"}, {"v", "i"});
    net.output("v").output("i");
    net.done();
    const auto got = run_cuda(net.g, net.feeds);
    expect_same(got, run_cpu(net.g, net.feeds));
    EXPECT_EQ(got.at("v").shape(), (Shape{3, k}));
  }
}

TEST(CudaDataDependent, CallerCaptureIsAClearError) {
  KILNRT_SKIP_WITHOUT_GPU();
  Net net = nonzero_chain(sparse({6, 7}, 11, 3, 1));
  CudaSession s(net.g);
  s.runner.prepare({{6, 7}}, s.stream.get());
  const auto& api = s.guard.api();
  ASSERT_EQ(api.StreamBeginCapture(s.stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  std::string message;
  ErrorCode code = ErrorCode::kInternal;
  try {
    s.runner.enqueue({nullptr}, {nullptr, nullptr}, s.stream.get());
  } catch (const Error& e) {
    message = e.what();
    code = e.code();
  }
  CUgraph captured = nullptr;
  EXPECT_EQ(api.StreamEndCapture(s.stream.get(), &captured), CUDA_SUCCESS);  // nothing invalidated the capture
  if (captured) api.GraphDestroy(captured);
  EXPECT_EQ(code, ErrorCode::kUnsupported) << message;
  EXPECT_NE(message.find("data-dependent"), std::string::npos) << message;
  EXPECT_NE(message.find("capture"), std::string::npos) << message;
  // Outside the capture the runner works as before.
  expect_same(s.run(net.feeds), run_cpu(net.g, net.feeds));
}

TEST(CudaDataDependent, PlanWithoutSyncPointsStillCapturesItsGraph) {
  KILNRT_SKIP_WITHOUT_GPU();
  Net net;
  net.input("x", random_tensor({4, 8}, 12));
  net.node("Relu", "relu", {"x"}, {"r"});
  net.node("Shape", "shape", {"x"}, {"s"});
  net.node("Reshape", "rs", {"r", "s"}, {"y"});
  net.output("y");
  net.done();
  CudaSession s(net.g);
  s.runner.set_graphs_enabled(true);
  EXPECT_EQ(s.plan.sync_points(), 0);
  EXPECT_FALSE(s.runner.data_dependent());
  const auto want = run_cpu(net.g, net.feeds);
  std::vector<CudaRunner::Mode> modes;
  for (int i = 0; i < 3; ++i) {
    expect_same(s.run(net.feeds), want);
    modes.push_back(s.runner.last_mode());
  }
  EXPECT_EQ(modes[0], CudaRunner::Mode::kDirect);
  EXPECT_EQ(modes[1], CudaRunner::Mode::kGraphCapture);
  EXPECT_EQ(modes[2], CudaRunner::Mode::kGraphReplay);
  EXPECT_EQ(s.runner.sync_count(), 0u);
}

TEST(CudaDataDependent, EngineRunSizesOutputsFromTheRun) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Through the public API: build -> load -> run(); the output sizes come from each run (cuda_engine.cc re-reads
  // them after the segmented run), compared with the CPU engine of the same model.
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {6, 7}));
  m.graph.nodes.push_back(NodeSpec{"NonZero", {"x"}, {"idx"}, {}, "nz"});
  m.graph.nodes.push_back(NodeSpec{"Transpose", {"idx"}, {"y"}, {}, "tr"});
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"z"}, {}, "relu"});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kInt64, {DimSpec::named("n"), 2}));
  m.graph.outputs.push_back(ValueInfoSpec::tensor("z", kFloat, {6, 7}));
  const std::string path = ::testing::TempDir() + "kilnrt_dd_engine.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> gpu_bytes = build_engine(path, opt);
  const std::vector<uint8_t> cpu_bytes = build_engine(path);
  auto gpu = Engine::from_bytes(gpu_bytes.data(), gpu_bytes.size());
  auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  auto gctx = gpu->create_context();
  auto cctx = cpu->create_context();
  std::vector<int64_t> counts;
  for (const Tensor& x : {sparse({6, 7}, 21, 3, 0), sparse({6, 7}, 22, 1, 0), sparse({6, 7}, 23, 7, 5)}) {
    const auto got = gctx->run({{"x", x}});
    const auto want = cctx->run({{"x", x}});
    expect_tensors_close(got.at("y"), want.at("y"), 0, 0);
    expect_tensors_close(got.at("z"), want.at("z"), 0, 0);
    counts.push_back(got.at("y").shape().at(0));
    EXPECT_EQ(gctx->last_execution_mode(), "direct");
  }
  EXPECT_EQ(counts, (std::vector<int64_t>{28, 0, 36}));
}

}  // namespace
}  // namespace kilnrt::cudatest
