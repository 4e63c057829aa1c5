// CUDA graph helper on the GPU: capture + replay, replay with new pointers (executable-graph update), re-capture
// through cuGraphExecUpdate, failed captures, and detection of a caller's capturing stream. Skipped without a GPU.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"
#include "kilnrt/cuda/graph.h"
#include "kilnrt/cuda/kernel.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/error.h"

namespace kc = kilnrt::cuda;

namespace {

const char* kAxpy = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)";

#define SKIP_WITHOUT_GPU_AND_NVRTC()                                                    \
  do {                                                                                  \
    std::string why_;                                                                   \
    if (!kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
    const kc::LibraryInfo& nv_ = kc::library(kc::Library::kNvrtc);                      \
    if (!nv_.found) GTEST_SKIP() << "NVRTC missing: " << nv_.why_missing;               \
  } while (0)

constexpr int kN = 4096;

struct Vectors {
  kc::DeviceBuffer x, y;
  explicit Vectors(kc::Stream& s, float xv, float yv) : x(0, kN * sizeof(float)), y(0, kN * sizeof(float)) {
    std::vector<float> hx(kN, xv), hy(kN, yv);
    x.copy_from_host_async(hx.data(), kN * sizeof(float), s.get());
    y.copy_from_host_async(hy.data(), kN * sizeof(float), s.get());
    s.synchronize();  // the host vectors go out of scope
  }
  const float* xp() const { return static_cast<const float*>(x.data()); }
  float* yp() const { return static_cast<float*>(y.data()); }
  std::vector<float> read_y(kc::Stream& s) const {
    std::vector<float> h(kN);
    const_cast<kc::DeviceBuffer&>(y).copy_to_host_async(h.data(), kN * sizeof(float), s.get());
    s.synchronize();
    return h;
  }
};

CUcontext current_ctx() {
  CUcontext c = nullptr;
  EXPECT_EQ(kc::driver_api().CtxGetCurrent(&c), CUDA_SUCCESS);
  return c;
}

}  // namespace

TEST(CudaGraph, CaptureReplayAndReplayWithNewPointers) {
  SKIP_WITHOUT_GPU_AND_NVRTC();
  CUcontext before = current_ctx();
  kc::Kernel k = kc::Kernel::compile(0, kAxpy, "axpy");
  kc::Stream stream(0);
  Vectors v1(stream, 1.f, 10.f), v2(stream, 3.f, 100.f);
  const kc::Dim3 grid(kN / 256), block(256);

  kc::CudaGraph graph(0);
  EXPECT_FALSE(graph.instantiated());
  auto r = graph.capture([&](kc::StreamHandle s) {
    EXPECT_TRUE(kc::stream_is_capturing(s, 0));
    k.launch(grid, block, 0, s, 2.f, v1.xp(), v1.yp(), kN);
    k.launch(grid, block, 0, s, 0.5f, v1.xp(), v1.yp(), kN);
  });
  EXPECT_EQ(r, kc::CudaGraph::CaptureResult::kInstantiated);
  EXPECT_EQ(graph.kernel_count(), 2u);
  EXPECT_FALSE(kc::stream_is_capturing(graph.capture_stream(), 0));

  // Capturing enqueued nothing: y is unchanged until the graph is launched.
  EXPECT_EQ(v1.read_y(stream)[0], 10.f);
  graph.launch(stream.get());
  graph.launch(stream.get());
  std::vector<float> y1 = v1.read_y(stream);
  EXPECT_FLOAT_EQ(y1[0], 10.f + 2 * (2.f + 0.5f) * 1.f);
  EXPECT_FLOAT_EQ(y1[kN - 1], y1[0]);

  // New pointers without re-capturing: replace both kernels' arguments in the executable graph.
  graph.set_kernel_args(0, 1.f, v2.xp(), v2.yp(), kN);
  graph.set_kernel_args(1, 2.f, v2.xp(), v2.yp(), kN);
  graph.launch(stream.get());
  std::vector<float> y2 = v2.read_y(stream);
  EXPECT_FLOAT_EQ(y2[0], 100.f + (1.f + 2.f) * 3.f);
  EXPECT_FLOAT_EQ(y2[kN - 1], y2[0]);
  EXPECT_FLOAT_EQ(v1.read_y(stream)[0], y1[0]) << "old pointers must no longer be used";
  EXPECT_THROW(graph.set_kernel_args(2, 1.f, v2.xp(), v2.yp(), kN), kilnrt::Error);

  // Re-capturing the same topology updates the executable graph in place.
  r = graph.capture([&](kc::StreamHandle s) {
    k.launch(grid, block, 0, s, 1.f, v1.xp(), v1.yp(), kN);
    k.launch(grid, block, 0, s, 1.f, v1.xp(), v1.yp(), kN);
  });
  EXPECT_EQ(r, kc::CudaGraph::CaptureResult::kUpdated);
  graph.launch(stream.get());
  EXPECT_FLOAT_EQ(v1.read_y(stream)[0], y1[0] + 2.f);
  // Set params still address the updated graph's nodes.
  graph.set_kernel_args(0, 10.f, v1.xp(), v1.yp(), kN);
  graph.launch(stream.get());
  EXPECT_FLOAT_EQ(v1.read_y(stream)[0], y1[0] + 2.f + 11.f);

  // Another topology is re-instantiated.
  r = graph.capture([&](kc::StreamHandle s) { k.launch(grid, block, 0, s, 1.f, v2.xp(), v2.yp(), kN); });
  EXPECT_EQ(r, kc::CudaGraph::CaptureResult::kInstantiated);
  EXPECT_EQ(graph.kernel_count(), 1u);
  graph.launch(stream.get());
  EXPECT_FLOAT_EQ(v2.read_y(stream)[0], y2[0] + 3.f);

  EXPECT_EQ(current_ctx(), before) << "the caller's current context changed";
}

TEST(CudaGraph, FailingWorkEndsTheCaptureAndKeepsTheOldGraph) {
  SKIP_WITHOUT_GPU_AND_NVRTC();
  kc::Kernel k = kc::Kernel::compile(0, kAxpy, "axpy");
  kc::Stream stream(0);
  Vectors v(stream, 1.f, 0.f);
  kc::CudaGraph graph(0);
  graph.capture(
      [&](kc::StreamHandle s) { k.launch(kc::Dim3(kN / 256), kc::Dim3(256), 0, s, 1.f, v.xp(), v.yp(), kN); });
  EXPECT_THROW(graph.capture([&](kc::StreamHandle) { throw std::runtime_error("work failed"); }), std::runtime_error);
  EXPECT_FALSE(kc::stream_is_capturing(graph.capture_stream(), 0));
  // An unsupported call inside the capture (a synchronisation of the capturing stream) is a clear error.
  try {
    graph.capture([&](kc::StreamHandle s) {
      k.launch(kc::Dim3(kN / 256), kc::Dim3(256), 0, s, 1.f, v.xp(), v.yp(), kN);
      kc::ContextGuard guard(0);
      (void)guard.api().StreamSynchronize(s);  // not permitted while capturing: invalidates the capture
    });
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kCuda);
    EXPECT_NE(e.message().find("capture"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(kc::stream_is_capturing(graph.capture_stream(), 0));
  ASSERT_TRUE(graph.instantiated());
  graph.launch(stream.get());
  EXPECT_FLOAT_EQ(v.read_y(stream)[0], 1.f);
}

TEST(CudaGraph, CallerCaptureIsDetectedSoKernelsAreEnqueuedDirectly) {
  SKIP_WITHOUT_GPU_AND_NVRTC();
  kc::Kernel k = kc::Kernel::compile(0, kAxpy, "axpy");
  kc::Stream caller(0);
  Vectors v(caller, 2.f, 1.f);
  EXPECT_EQ(kc::stream_capture_status(caller.get(), 0), kc::CaptureStatus::kNone);
  EXPECT_EQ(kc::stream_capture_status(nullptr, 0), kc::CaptureStatus::kNone);

  const kc::DriverApi& api = kc::driver_api();
  CUgraph captured = nullptr;
  {
    // The caller (torch.cuda.graph does the same through the runtime) captures its own stream.
    kc::ContextGuard guard(0);
    ASSERT_EQ(api.StreamBeginCapture(caller.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  }
  EXPECT_TRUE(kc::stream_is_capturing(caller.get(), 0));
  EXPECT_EQ(kc::stream_capture_status(caller.get(), 0), kc::CaptureStatus::kActive);
  // What an engine does then: enqueue into the caller's capture.
  k.launch(kc::Dim3(kN / 256), kc::Dim3(256), 0, caller.get(), 1.f, v.xp(), v.yp(), kN);
  {
    kc::ContextGuard guard(0);
    ASSERT_EQ(api.StreamEndCapture(caller.get(), &captured), CUDA_SUCCESS);
  }
  ASSERT_NE(captured, nullptr);
  EXPECT_FALSE(kc::stream_is_capturing(caller.get(), 0));
  EXPECT_FLOAT_EQ(v.read_y(caller)[0], 1.f) << "captured work must not have run";
  {
    kc::ContextGuard guard(0);
    size_t n = 0;
    ASSERT_EQ(api.GraphGetNodes(captured, nullptr, &n), CUDA_SUCCESS);
    EXPECT_EQ(n, 1u) << "the caller's graph recorded kilnrt's kernel";
    CUgraphExec exec = nullptr;
    ASSERT_EQ(api.GraphInstantiateWithFlags(&exec, captured, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.GraphLaunch(exec, caller.get()), CUDA_SUCCESS);
    ASSERT_EQ(api.StreamSynchronize(caller.get()), CUDA_SUCCESS);
    api.GraphExecDestroy(exec);
    api.GraphDestroy(captured);
  }
  EXPECT_FLOAT_EQ(v.read_y(caller)[0], 3.f);
}

TEST(CudaGraph, CaptureWithProgrammaticEdges) {
  SKIP_WITHOUT_GPU_AND_NVRTC();
  // cuBLASLt launches some Hopper kernels with programmatic stream serialization (PDL): the captured graph then has
  // programmatic edges, which the pre-12.3 cuGraphGetEdges refuses to list (CUDA_ERROR_LOSSY_QUERY). The same here
  // with cuLaunchKernelEx.
  const auto launch_ex = kc::driver_api().LaunchKernelEx;
  kc::Kernel k = kc::Kernel::compile(0, kAxpy, "axpy");
  kc::Stream stream(0);
  Vectors v(stream, 1.f, 0.f);
  kc::CudaGraph graph(0);
  graph.capture([&](kc::StreamHandle s) {
    k.launch(kc::Dim3(kN / 256), kc::Dim3(256), 0, s, 1.f, v.xp(), v.yp(), kN);
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = kN / 256;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 256;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    float a = 2.f;
    const float* x = v.xp();
    float* y = v.yp();
    int n = kN;
    void* params[] = {&a, &x, &y, &n};
    kc::ContextGuard guard(0);
    ASSERT_EQ(launch_ex(&cfg, k.function(), params, nullptr), CUDA_SUCCESS);
  });
  EXPECT_EQ(graph.kernel_count(), 2u);
  graph.set_kernel_args(1, 4.f, v.xp(), v.yp(), kN);  // the second kernel, found through the programmatic edge
  graph.launch(stream.get());
  EXPECT_FLOAT_EQ(v.read_y(stream)[0], 1.f + 4.f);
}

TEST(CudaGraph, EmptyGraphIsAClearError) {
  kc::CudaGraph empty;
  EXPECT_THROW(empty.launch(nullptr), kilnrt::Error);
  EXPECT_THROW(empty.capture([](kc::StreamHandle) {}), kilnrt::Error);
  EXPECT_EQ(empty.kernel_count(), 0u);
}
