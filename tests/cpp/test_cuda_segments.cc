// Host-only checks of the CUDA plan's sync points (runner_segments.cc): which nodes make a plan segmented
// (a data-dependent layer, a device value read on the host), that static plans stay static, that such plans report
// no arena (their values are sized while they run) and the refusals. Plans are built without a GPU: the graphs give
// no constant to a device layer, so nothing is uploaded.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_plan.h"
#include "ops/cuda/cuda_layer.h"
#include "dd_test_graph.h"

namespace kilnrt::ddtest {
namespace {

using backends::cuda::CudaPlan;
using backends::cuda::CudaRunner;

Tensor f32(const Shape& s) { return Tensor::zeros(DType::kFloat32, s); }
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }

std::string tactic_of(const CudaPlan& plan, const std::string& node) {
  for (const auto& [name, tactic] : plan.tactics())
    if (name == node) return tactic;
  return "";
}

TEST(CudaSegments, NonZeroIsASyncPoint) {
  Net net;
  net.input("x", f32({4, 5}));
  net.node("NonZero", "nz", {"x"}, {"idx"});
  net.node("Transpose", "tr", {"idx"}, {"y"});
  net.output("y");
  const ir::Graph& g = net.done();
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);
  EXPECT_EQ(plan.sync_points(), 1);
  EXPECT_EQ(tactic_of(plan, "nz"), "cuda:kernel:nonzero-scan");
  CudaRunner runner(plan);
  EXPECT_TRUE(runner.data_dependent());
  EXPECT_EQ(runner.arena_bytes_for({{4, 5}}), 0u);  // sized while running: no arena to report
}

TEST(CudaSegments, CompressIsASyncPoint) {
  Net net;
  net.input("x", f32({3, 4}));
  net.input("c", Tensor::zeros(DType::kBool, {3}));
  set_int(net.node("Compress", "cmp", {"x", "c"}, {"y"}), "axis", 0);
  net.output("y");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 1);
}

TEST(CudaSegments, UniqueAndNmsAreSyncPoints) {
  Net net(11);
  net.input("x", f32({6}));
  net.input("boxes", f32({1, 5, 4}));
  net.input("scores", f32({1, 2, 5}));
  net.constant("max", i64({2}, {1}));
  net.constant("iou", Tensor::from_vector(std::vector<float>{0.5f}, DType::kFloat32, {1}));
  net.node("Unique", "uniq", {"x"}, {"u", "", "inv", "cnt"});
  net.node("NonMaxSuppression", "nms", {"boxes", "scores", "max", "iou"}, {"sel"});
  net.output("u").output("inv").output("cnt").output("sel");
  const ir::Graph& g = net.done();
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);  // NMS reads its constant limits on the host: nothing to upload
  EXPECT_EQ(plan.sync_points(), 2);
  EXPECT_EQ(tactic_of(plan, "uniq"), "cuda:kernel:unique-pairwise");
  EXPECT_EQ(tactic_of(plan, "nms"), "cuda:kernel:nms-greedy");
}

TEST(CudaSegments, DeviceValueReadOnTheHostIsASyncPoint) {
  // Reshape's shape is a graph input (a device value): read on the host mid-run.
  Net net;
  net.input("x", f32({2, 6}));
  net.input("s", i64({3, 4}, {2}));
  net.node("Reshape", "rs", {"x", "s"}, {"r"});
  net.node("Relu", "relu", {"r"}, {"y"});
  net.output("y");
  const ir::Graph& g = net.done();
  EXPECT_NO_THROW(CudaPlan::check_supported(g));
  CudaPlan plan(g, 0);
  EXPECT_EQ(plan.sync_points(), 1);
  EXPECT_EQ(CudaRunner(plan).arena_bytes_for({{2, 6}, {2}}), 0u);
}

TEST(CudaSegments, RangeWithDeviceInputsCountsEachInput) {
  Net net;
  net.input("a", Tensor::from_vector(std::vector<float>{0.f}, DType::kFloat32, {}));
  net.input("b", Tensor::from_vector(std::vector<float>{5.f}, DType::kFloat32, {}));
  net.input("d", Tensor::from_vector(std::vector<float>{1.f}, DType::kFloat32, {}));
  net.node("Range", "range", {"a", "b", "d"}, {"y"});
  net.output("y");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 3);  // three device values read on the host (one sync each)
}

TEST(CudaSegments, ShapeComputationStaysStatic) {
  // Shape -> Reshape is a host shape computation: no sync point, the arena is laid out ahead as before.
  Net net;
  net.input("x", f32({2, 6}));
  net.node("Relu", "relu", {"x"}, {"r"});
  net.node("Shape", "shape", {"x"}, {"s"});
  net.node("Reshape", "rs", {"r", "s"}, {"y"});
  net.output("y");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 0);
  CudaRunner runner(plan);
  EXPECT_FALSE(runner.data_dependent());
  EXPECT_EQ(runner.arena_bytes_for({{2, 6}}), 512u);  // input x and the Relu output: 48 bytes, one 256-byte unit each
  EXPECT_EQ(tactic_of(plan, "shape"), "host:shape-computation");
}

TEST(CudaSegments, NonZeroOfAConstantStaysOnTheHost) {
  // Every input known on the host: a host step as before, not a sync point.
  Net net;
  net.constant("k", Tensor::from_vector(std::vector<float>{0.f, 1.f, 0.f, 2.f}, DType::kFloat32, {4}));
  net.input("x", f32({2}));
  net.node("NonZero", "nz", {"k"}, {"idx"});
  net.node("Shape", "shape", {"idx"}, {"s"});
  net.node("Relu", "relu", {"x"}, {"y"});
  net.output("y").output("s");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 0);
  EXPECT_EQ(tactic_of(plan, "nz"), "host:shape-computation");
}

TEST(CudaSegments, SixteenBitEnginesAcceptDataDependentShapes) {
  // Segmented runs with 16-bit storage: the data-dependent layer is a float32 island.
  Net net;
  net.input("x", f32({4}));
  set_string(net.node("Relu", "relu", {"x"}, {"r"}), backends::cuda::kPrecisionAttr, "fp16");
  net.node("NonZero", "nz_fp16", {"r"}, {"y"});
  net.output("y");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 1);
}

TEST(CudaSegments, SixteenBitEnginesAcceptADeviceValueReadOnTheHost) {
  // Segmented runs with 16-bit storage: the value is read at a sync point.
  Net net;
  net.input("x", f32({2, 6}));
  net.input("s", i64({3, 4}, {2}));
  set_string(net.node("Relu", "relu", {"x"}, {"r"}), backends::cuda::kPrecisionAttr, "fp16");
  net.node("Reshape", "rs", {"r", "s"}, {"y"});
  net.output("y");
  CudaPlan plan(net.done(), 0);
  EXPECT_EQ(plan.sync_points(), 1);
}

TEST(CudaSegments, UnknownOpsAreStillRefusedByName) {
  Net net;
  net.input("x", f32({4}));
  net.node("NoSuchOp", "mystery", {"x"}, {"y"});
  net.output("y");
  ir::Graph g = net.g;  // no shape inference: the op has no schema
  try {
    CudaPlan::check_supported(g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("mystery"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kilnrt::ddtest
