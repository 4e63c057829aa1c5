// Graph replay on the caller's own input / output memory: a runner called again with the same pointers
// captures a second CUDA graph that reads the caller's inputs and writes its outputs without copies through the
// arena; other pointers use the copying graph. The values must be right in every mode.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda_backend_test_util.h"
#include "pass_test_util.h"
#include "passes/shape_inference.h"

namespace kilnrt {
namespace {

using cudatest::OneNode;

using passtest::random_tensor;

ir::Node matmul_node() {
  ir::Node n;
  n.op_type = "MatMul";
  n.name = "mm";
  n.inputs = {"a", "w"};
  n.outputs = {"y"};
  return n;
}

// Drives a runner like ExecutionContext::enqueue does, with device buffers of the test's own.
struct Driver {
  const ir::Graph& g;
  kilnrt::cuda::ContextGuard guard{0};
  backends::cuda::CudaPlan plan;
  backends::cuda::CudaRunner runner;
  kilnrt::cuda::Stream stream{0};
  explicit Driver(const ir::Graph& graph) : g(graph), plan(graph, 0), runner(plan) {}

  void upload(kilnrt::cuda::DeviceBuffer& buf, const Tensor& t) {
    buf.copy_from_host_async(t.raw(), t.nbytes(), stream.get());
  }
  Tensor download(const kilnrt::cuda::DeviceBuffer& buf, const Shape& shape) {
    Tensor t = Tensor::empty(DType::kFloat32, shape);
    KILNRT_CU_CHECK(
        guard.api(),
        guard.api().MemcpyDtoHAsync(t.raw(), reinterpret_cast<CUdeviceptr>(buf.data()), t.nbytes(), stream.get()),
        "test");
    stream.synchronize();
    return t;
  }
  void enqueue(const std::vector<const void*>& in, const std::vector<void*>& out, const std::vector<Shape>& shapes) {
    runner.prepare(shapes, stream.get());
    runner.enqueue(in, out, stream.get());
  }
};

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4f) << what << " element " << i;
}

TEST(CudaDirectIoGraph, RepeatedPointersReplayWithoutCopiesAndStayCorrect) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Shape as{16, 32}, ws{32, 24}, ys{16, 24};
  OneNode one(matmul_node(), {random_tensor(as, 1), random_tensor(ws, 2)}, {false, true});
  Driver d(one.g);
  kilnrt::cuda::DeviceBuffer a0(0, 16 * 32 * 4), a1(0, 16 * 32 * 4), y0(0, 16 * 24 * 4), y1(0, 16 * 24 * 4);
  const auto& st = d.runner.stats();
  for (int call = 0; call < 8; ++call) {
    // Same pointers every call, new input values each time (the graph reads the caller's memory as it is now).
    Tensor a = random_tensor(as, 100 + call);
    d.upload(a0, a);
    d.enqueue({a0.data()}, {y0.data()}, {as});
    const Tensor want = cudatest::run_cpu(one.g, {{"a", a}}).at("y");
    expect_close(d.download(y0, ys), want, "call " + std::to_string(call));
  }
  EXPECT_EQ(st.direct_io_captures, 1u) << "one capture on the caller's pointers";
  EXPECT_GE(st.direct_io_replays, 4u) << "later calls replay it";
  const uint64_t direct_before = st.direct_io_replays;
  // Other pointers: the copying graph (no capture per call), still right; alternating pointers never recapture.
  for (int call = 0; call < 4; ++call) {
    Tensor a = random_tensor(as, 200 + call);
    kilnrt::cuda::DeviceBuffer& ain = call % 2 ? a1 : a0;
    kilnrt::cuda::DeviceBuffer& yout = call % 2 ? y0 : y1;
    d.upload(ain, a);
    d.enqueue({ain.data()}, {yout.data()}, {as});
    const Tensor want = cudatest::run_cpu(one.g, {{"a", a}}).at("y");
    expect_close(d.download(yout, ys), want, "alternating call " + std::to_string(call));
  }
  EXPECT_EQ(st.direct_io_replays, direct_before) << "changing pointers use the copying graph";
  EXPECT_EQ(st.direct_io_captures, 1u);
  // Settling on new pointers: one new capture, then replays on them.
  for (int call = 0; call < 3; ++call) {
    Tensor a = random_tensor(as, 300 + call);
    d.upload(a1, a);
    d.enqueue({a1.data()}, {y1.data()}, {as});
    const Tensor want = cudatest::run_cpu(one.g, {{"a", a}}).at("y");
    expect_close(d.download(y1, ys), want, "new pointers call " + std::to_string(call));
  }
  EXPECT_EQ(st.direct_io_captures, 2u);
  EXPECT_GT(st.direct_io_replays, direct_before);
}

TEST(CudaDirectIoGraph, OutputsLeftToTheArenaAndTheSwitchOff) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Shape as{8, 16}, ws{16, 8}, ys{8, 8};
  OneNode one(matmul_node(), {random_tensor(as, 3), random_tensor(ws, 4)}, {false, true});
  Driver d(one.g);
  kilnrt::cuda::DeviceBuffer a0(0, 8 * 16 * 4);
  // No output pointer (the caller reads output_device_ptr): the input alone is the caller's memory.
  for (int call = 0; call < 6; ++call) {
    Tensor a = random_tensor(as, 400 + call);
    d.upload(a0, a);
    d.enqueue({a0.data()}, {nullptr}, {as});
    Tensor got = Tensor::empty(DType::kFloat32, ys);
    KILNRT_CU_CHECK(
        d.guard.api(),
        d.guard.api().MemcpyDtoHAsync(got.raw(), reinterpret_cast<CUdeviceptr>(d.runner.output_device_ptr(0)),
                                      got.nbytes(), d.stream.get()),
        "test");
    d.stream.synchronize();
    expect_close(got, cudatest::run_cpu(one.g, {{"a", a}}).at("y"), "call " + std::to_string(call));
  }
  EXPECT_EQ(d.runner.stats().direct_io_captures, 1u);
}

// A 16-bit plan (float32 graph I/O converted at the edges) whose outputs are a GEMM result and a view of it (Reshape):
// the conversion writes the caller's output directly, the view is copied; both right in every call.
TEST(CudaDirectIoGraph, Fp16PlanWithAnAliasedSecondOutput) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Shape as{16, 32}, ws{32, 24}, ys{16, 24}, zs{384};
  ir::Node mm = matmul_node();
  ir::Attribute prec;
  prec.kind = ir::Attribute::Kind::kString;
  prec.s = "fp16";
  mm.attrs["kilnrt_precision"] = prec;
  OneNode one(mm, {random_tensor(as, 5), random_tensor(ws, 6)}, {false, true});
  ir::Node reshape;
  reshape.op_type = "Reshape";
  reshape.name = "flat";
  reshape.inputs = {"y", "flat_shape"};
  reshape.outputs = {"z"};
  reshape.attrs["kilnrt_precision"] = prec;
  Tensor flat_shape = Tensor::empty(DType::kInt64, Shape{1});
  flat_shape.data<int64_t>()[0] = 384;
  one.g.constants["flat_shape"] = flat_shape;
  one.g.nodes.push_back(reshape);
  one.g.outputs.push_back("z");
  passes::infer_shapes(one.g);
  Driver d(one.g);
  kilnrt::cuda::DeviceBuffer a0(0, 16 * 32 * 4), y0(0, 16 * 24 * 4), z0(0, 384 * 4);
  for (int call = 0; call < 6; ++call) {
    Tensor a = random_tensor(as, 500 + call);
    d.upload(a0, a);
    d.enqueue({a0.data()}, {y0.data(), z0.data()}, {as});
    const auto want = cudatest::run_cpu(one.g, {{"a", a}});
    const Tensor y = d.download(y0, ys), z = d.download(z0, zs);
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_NEAR(y.data<float>()[i], want.at("y").data<float>()[i], 2e-2f) << "call " << call << " y " << i;
      ASSERT_EQ(y.data<float>()[i], z.data<float>()[i]) << "call " << call << " z " << i;
    }
  }
  EXPECT_EQ(d.runner.stats().direct_io_captures, 1u);
  EXPECT_GE(d.runner.stats().direct_io_replays, 2u);
}

}  // namespace
}  // namespace kilnrt
