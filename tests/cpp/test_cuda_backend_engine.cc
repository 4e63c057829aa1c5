// CUDA engines end to end: the dynamo fixtures built with device "cuda" match torch's outputs and the CPU backend
// (batch 1, 2, 4 through one engine), enqueue() on device pointers, the caller's context and context stack are
// unchanged (no context current; a user context current), and building without a GPU is a clear error.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"
#include "ir/onnx_import.h"
#include "passes/optimize.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"
#include "kilnrt/cuda/graph.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "accuracy_check.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"

using namespace kilnrt;
namespace kc = kilnrt::cuda;

namespace {

void expect_close(const Tensor& got, const Tensor& want) { testing_util::expect_close(got, want, 1e-4, 0.99999, true); }

#define SKIP_WITHOUT_GPU()                                                      \
  do {                                                                          \
    std::string why_;                                                           \
    if (!cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

std::string fixture(const std::string& name) {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/" + name;
}

Tensor batch_of(const Tensor& x, int64_t b) {  // repeats x's samples to batch b
  Shape s = x.shape();
  const int64_t per = x.numel() / s[0];
  s[0] = b;
  Tensor t = Tensor::empty(x.dtype(), s);
  for (int64_t i = 0; i < b; ++i)
    std::memcpy(t.data<float>() + i * per, x.data<float>() + (i % x.shape()[0]) * per, per * sizeof(float));
  return t;
}

CUcontext current_ctx() {
  CUcontext c = nullptr;
  kc::driver_api().CtxGetCurrent(&c);
  return c;
}

class CudaFixture : public testing::TestWithParam<std::string> {};

}  // namespace

TEST(CudaBackendEngine, BuildWithoutGpuIsAClearError) {
  std::string why;
  if (cuda_available(&why)) GTEST_SKIP() << "a GPU is present: the no-GPU error cannot be observed";
  BuildOptions opt;
  opt.device = "cuda";
  try {
    build_engine(fixture("mobilenet_v3_small.onnx"), opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable CUDA GPU"), std::string::npos) << e.what();
  }
}

TEST_P(CudaFixture, EveryNodeIsPlaceable) {  // no GPU needed
  ir::Graph g = ir::import_onnx_file(fixture(GetParam() + ".onnx"));
  passes::optimize_graph(g);
  EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(g));
}

TEST_P(CudaFixture, MatchesTorchAndCpuWithDynamicBatch) {
  SKIP_WITHOUT_GPU();
  const std::string name = GetParam();
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes = build_engine(fixture(name + ".onnx"), opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(engine->header().target.rfind("sm_", 0), 0u);
  std::map<std::string, int> tactics;
  for (const LayerInfo& l : engine->layers()) {
    EXPECT_NE(l.placement, "cpu") << l.name;
    tactics[l.placement + ":" + l.tactic]++;
    // With cuDNN present, convolutions run on cuDNN (the direct kernel is the fallback only).
    if (l.op_type == "Conv" && kc::library(kc::Library::kCudnn).found && !std::getenv("KILNRT_CUDA_CONV"))
      EXPECT_EQ(l.tactic, "cudnn:conv-fwd-fp32") << l.name;
  }
  std::printf("    tactics:");
  for (const auto& [t, n] : tactics) std::printf(" %s x%d", t.c_str(), n);
  std::printf("\n");
  const std::vector<uint8_t> cpu_bytes = build_engine(fixture(name + ".onnx"));
  auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  const Tensor x = load_npy(fixture(name + ".input.npy"));
  const Tensor y = load_npy(fixture(name + ".expected.npy"));
  auto ctx = engine->create_context();
  auto out = ctx->run({{"x", x}});
  expect_close(out.at("y"), y);
  for (int64_t b : {1, 2, 4, 2}) {
    SCOPED_TRACE("batch " + std::to_string(b));
    const Tensor xb = batch_of(x, b);
    const Tensor want = cpu->run({{"x", xb}}).at("y");
    expect_close(ctx->run({{"x", xb}}).at("y"), want);
  }
}

INSTANTIATE_TEST_SUITE_P(Dynamo, CudaFixture, testing::Values("mobilenet_v3_small", "transformer_encoder_layer"));

TEST(CudaBackendEngine, EnqueueOnDevicePointersAndCallerStream) {
  SKIP_WITHOUT_GPU();
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes = build_engine(fixture("transformer_encoder_layer.onnx"), opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  const Tensor x = load_npy(fixture("transformer_encoder_layer.input.npy"));
  const Tensor y = load_npy(fixture("transformer_encoder_layer.expected.npy"));
  auto ctx = engine->create_context();
  const Shape out_shape = ctx->output_shapes({{"x", x.shape()}}).at("y");
  ASSERT_EQ(out_shape, y.shape());
  kc::DeviceBuffer din(0, x.nbytes()), dout(0, y.nbytes());
  kc::Stream stream(0);
  din.copy_from_host_async(x.raw(), x.nbytes(), stream.get());
  ctx->enqueue({{"x", DeviceTensor{din.data(), DType::kFloat32, x.shape(), 0}}},
               {{"y", DeviceTensor{dout.data(), DType::kFloat32, y.shape(), 0}}}, stream.get());
  Tensor got = Tensor::empty(DType::kFloat32, y.shape());
  dout.copy_to_host_async(got.raw(), got.nbytes(), stream.get());
  stream.synchronize();
  expect_close(got, y);
  // Host memory is refused with a clear error.
  std::vector<float> host(x.numel());
  EXPECT_THROW(ctx->enqueue({{"x", DeviceTensor{host.data(), DType::kFloat32, x.shape(), 0}}},
                            {{"y", DeviceTensor{dout.data(), DType::kFloat32, y.shape(), 0}}}, stream.get()),
               Error);
}

TEST(CudaBackendEngine, CallerContextUnchanged) {
  SKIP_WITHOUT_GPU();
  BuildOptions opt;
  opt.device = "cuda";
  // No context current (fresh thread state in this test binary is not guaranteed: pop whatever is current).
  ASSERT_EQ(current_ctx(), nullptr) << "the test thread should start with no current context";
  const std::vector<uint8_t> bytes = build_engine(fixture("mobilenet_v3_small.onnx"), opt);
  EXPECT_EQ(current_ctx(), nullptr);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(current_ctx(), nullptr);
  const Tensor x = load_npy(fixture("mobilenet_v3_small.input.npy"));
  {
    auto ctx = engine->create_context();
    EXPECT_EQ(current_ctx(), nullptr);
    ctx->run({{"x", x}});
    EXPECT_EQ(current_ctx(), nullptr);
  }
  EXPECT_EQ(current_ctx(), nullptr);
  // A user context current (what pycuda.autoinit makes): still current afterwards, stack depth unchanged.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using CreateFn = CUresult (*)(CUcontext*, unsigned, CUdevice);
  using DestroyFn = CUresult (*)(CUcontext);
  auto create = reinterpret_cast<CreateFn>(dlsym(lib, "cuCtxCreate_v2"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "cuCtxDestroy_v2"));
  if (!create || !destroy) GTEST_SKIP() << "cuCtxCreate_v2 not exported";
  CUcontext user = nullptr;
  CUdevice dev = 0;
  kc::driver_api().DeviceGet(&dev, 0);
  ASSERT_EQ(create(&user, 0, dev), CUDA_SUCCESS);
  ASSERT_EQ(current_ctx(), user);
  {
    auto ctx = engine->create_context();
    EXPECT_EQ(current_ctx(), user);
    auto out = ctx->run({{"x", x}});
    EXPECT_EQ(current_ctx(), user);
    expect_close(out.at("y"), load_npy(fixture("mobilenet_v3_small.expected.npy")));
  }
  EXPECT_EQ(current_ctx(), user);
  // Stack depth: popping the user context leaves nothing current.
  CUcontext popped = nullptr;
  EXPECT_EQ(kc::driver_api().CtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, user);
  EXPECT_EQ(current_ctx(), nullptr);
  destroy(user);
}

// ---- CUDA graphs ------------------------------------------------------------------------------------------------

namespace {

std::shared_ptr<Engine> cuda_engine_for(const std::string& name) {
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes = build_engine(fixture(name + ".onnx"), opt);
  return Engine::from_bytes(bytes.data(), bytes.size());
}

Tensor scaled(const Tensor& x, float f) {
  Tensor t = x.clone();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= f;
  return t;
}

}  // namespace

TEST_P(CudaFixture, GraphsOnAndOffGiveIdenticalResults) {
  SKIP_WITHOUT_GPU();
  auto engine = cuda_engine_for(GetParam());
  const Tensor x = load_npy(fixture(GetParam() + ".input.npy"));
  auto on = engine->create_context();
  auto off = engine->create_context();
  on->set_cuda_graphs(true);
  off->set_cuda_graphs(false);
  EXPECT_EQ(on->last_execution_mode(), "");
  const char* expected_modes[] = {"direct", "graph-capture", "graph-replay", "graph-replay"};
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = scaled(x, 1.f + 0.25f * call);  // new values each call
    const Tensor a = on->run({{"x", xc}}).at("y");
    EXPECT_EQ(on->last_execution_mode(), expected_modes[call]);
    const Tensor b = off->run({{"x", xc}}).at("y");
    EXPECT_EQ(off->last_execution_mode(), "direct");
    // Same kernels, same order: identical up to library nondeterminism (none expected).
    testing_util::expect_close(a, b, 1e-6, 0.9999999, true);
  }
  // A second shape tuple gets its own graph; the first one is still replayed afterwards.
  const Tensor x2 = batch_of(x, 2);
  for (int i = 0; i < 3; ++i) on->run({{"x", x2}});
  EXPECT_EQ(on->last_execution_mode(), "graph-replay");
  const Tensor y = on->run({{"x", x}}).at("y");
  EXPECT_EQ(on->last_execution_mode(), "graph-replay");
  expect_close(y, load_npy(fixture(GetParam() + ".expected.npy")));
}

TEST(CudaBackendEngine, GraphReplayWithNewPointersEveryCall) {
  SKIP_WITHOUT_GPU();
  auto engine = cuda_engine_for("transformer_encoder_layer");
  const std::vector<uint8_t> cpu_bytes = build_engine(fixture("transformer_encoder_layer.onnx"));
  auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  const Tensor x = load_npy(fixture("transformer_encoder_layer.input.npy"));
  auto ctx = engine->create_context();
  const Shape out_shape = ctx->output_shapes({{"x", x.shape()}}).at("y");
  kc::Stream stream(0);
  for (int call = 0; call < 5; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    // Fresh buffers every call (what torch's caching allocator hands out): the graph must not keep old addresses.
    kc::DeviceBuffer din(0, x.nbytes()), dout(0, shape_numel(out_shape) * sizeof(float));
    const Tensor xc = scaled(x, 1.f - 0.1f * call);
    din.copy_from_host_async(xc.raw(), xc.nbytes(), stream.get());
    ctx->enqueue({{"x", DeviceTensor{din.data(), DType::kFloat32, x.shape(), 0}}},
                 {{"y", DeviceTensor{dout.data(), DType::kFloat32, out_shape, 0}}}, stream.get());
    if (call >= 2) EXPECT_EQ(ctx->last_execution_mode(), "graph-replay");
    Tensor got = Tensor::empty(DType::kFloat32, out_shape);
    dout.copy_to_host_async(got.raw(), got.nbytes(), stream.get());
    stream.synchronize();
    expect_close(got, cpu->run({{"x", xc}}).at("y"));
  }
}

TEST(CudaBackendEngine, CallerStreamCaptureRecordsTheEngine) {
  SKIP_WITHOUT_GPU();
  auto engine = cuda_engine_for("mobilenet_v3_small");
  const std::vector<uint8_t> cpu_bytes = build_engine(fixture("mobilenet_v3_small.onnx"));
  auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  const Tensor x = load_npy(fixture("mobilenet_v3_small.input.npy"));
  auto ctx = engine->create_context();
  const Shape out_shape = ctx->output_shapes({{"x", x.shape()}}).at("y");
  const size_t out_bytes = shape_numel(out_shape) * sizeof(float);
  kc::Stream caller(0);
  kc::DeviceBuffer din(0, x.nbytes()), dout(0, out_bytes);
  din.copy_from_host_async(x.raw(), x.nbytes(), caller.get());
  auto enqueue = [&] {
    ctx->enqueue({{"x", DeviceTensor{din.data(), DType::kFloat32, x.shape(), 0}}},
                 {{"y", DeviceTensor{dout.data(), DType::kFloat32, out_shape, 0}}}, caller.get());
  };
  enqueue();  // warm-up outside the capture (torch.cuda.graph demands the same)
  enqueue();  // kilnrt's own graph exists too: it must not be replayed into the caller's capture
  caller.synchronize();
  const kc::DriverApi& api = kc::driver_api();
  {
    kc::ContextGuard guard(0);
    ASSERT_EQ(api.MemsetD8Async(reinterpret_cast<CUdeviceptr>(dout.data()), 0, out_bytes, caller.get()), CUDA_SUCCESS);
    ASSERT_EQ(api.StreamSynchronize(caller.get()), CUDA_SUCCESS);
    // torch.cuda.graph captures in global mode by default.
    ASSERT_EQ(api.StreamBeginCapture(caller.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  }
  CUgraph captured = nullptr;
  try {
    enqueue();
  } catch (...) {
    kc::ContextGuard guard(0);
    api.StreamEndCapture(caller.get(), &captured);
    if (captured) api.GraphDestroy(captured);
    throw;
  }
  EXPECT_EQ(ctx->last_execution_mode(), "caller-capture");
  // The caller's capture stays valid (kilnrt's own graph was not replayed into it, nothing was synchronised).
  EXPECT_EQ(kc::stream_capture_status(caller.get(), 0), kc::CaptureStatus::kActive);
  {
    kc::ContextGuard guard(0);
    ASSERT_EQ(api.StreamEndCapture(caller.get(), &captured), CUDA_SUCCESS);
  }
  ASSERT_NE(captured, nullptr);
  Tensor got = Tensor::empty(DType::kFloat32, out_shape);
  dout.copy_to_host_async(got.raw(), got.nbytes(), caller.get());
  caller.synchronize();
  EXPECT_EQ(got.data<float>()[0], 0.f) << "captured work must not run before the caller launches its graph";
  {
    kc::ContextGuard guard(0);
    size_t n = 0;
    ASSERT_EQ(api.GraphGetNodes(captured, nullptr, &n), CUDA_SUCCESS);
    EXPECT_GT(n, 10u) << "the caller's graph recorded kilnrt's layers";
    CUgraphExec exec = nullptr;
    ASSERT_EQ(api.GraphInstantiateWithFlags(&exec, captured, 0), CUDA_SUCCESS);
    // Replay twice with different input contents at the captured addresses (how torch replays its graphs).
    for (float f : {1.f, 0.5f}) {
      const Tensor xc = scaled(x, f);
      din.copy_from_host_async(xc.raw(), xc.nbytes(), caller.get());
      ASSERT_EQ(api.GraphLaunch(exec, caller.get()), CUDA_SUCCESS);
      dout.copy_to_host_async(got.raw(), got.nbytes(), caller.get());
      ASSERT_EQ(api.StreamSynchronize(caller.get()), CUDA_SUCCESS);
      expect_close(got, cpu->run({{"x", xc}}).at("y"));
    }
    api.GraphExecDestroy(exec);
    api.GraphDestroy(captured);
  }
}

// A fresh context and shapes it never saw, enqueued into a caller's stream that captures in GLOBAL mode (what
// torch.cuda.graph does on its own capture stream): preparation allocates in relaxed capture mode and uploads on a
// private stream, so the caller's capture stays valid; its graph, instantiated and replayed, gives the right results.
TEST(CudaBackendEngine, FreshContextAndNewShapesInsideCallerGlobalCapture) {
  SKIP_WITHOUT_GPU();
  for (const std::string model : {"mobilenet_v3_small", "transformer_encoder_layer"}) {
    SCOPED_TRACE(model);
    auto engine = cuda_engine_for(model);
    const std::vector<uint8_t> cpu_bytes = build_engine(fixture(model + ".onnx"));
    auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
    const Tensor x0 = load_npy(fixture(model + ".input.npy"));
    const std::string in_name = engine->inputs().at(0).name, out_name = engine->outputs().at(0).name;
    // Output shapes from another context (a fresh one must not be needed before the capture).
    auto probe = engine->create_context();
    std::vector<Tensor> xs;
    std::vector<Shape> out_shapes;
    std::vector<std::unique_ptr<kc::DeviceBuffer>> din, dout;
    kc::Stream caller(0);
    for (int64_t b : {2, 3}) {  // two new shape tuples inside one capture: the arena grows while capturing
      xs.push_back(batch_of(x0, b));
      out_shapes.push_back(probe->output_shapes({{in_name, xs.back().shape()}}).at(out_name));
      din.push_back(std::make_unique<kc::DeviceBuffer>(0, xs.back().nbytes()));
      dout.push_back(std::make_unique<kc::DeviceBuffer>(0, shape_numel(out_shapes.back()) * sizeof(float)));
      din.back()->copy_from_host_async(xs.back().raw(), xs.back().nbytes(), caller.get());
      dout.back()->memset_async(0, caller.get());
    }
    caller.synchronize();
    const kc::DriverApi& api = kc::driver_api();
    {
      kc::ContextGuard guard(0);
      ASSERT_EQ(api.StreamBeginCapture(caller.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    }
    CUgraph captured = nullptr;
    std::unique_ptr<ExecutionContext> ctx;
    try {
      ctx = engine->create_context();  // created while the caller captures
      for (size_t i = 0; i < xs.size(); ++i) {
        ctx->enqueue({{in_name, DeviceTensor{din[i]->data(), DType::kFloat32, xs[i].shape(), 0}}},
                     {{out_name, DeviceTensor{dout[i]->data(), DType::kFloat32, out_shapes[i], 0}}}, caller.get());
        EXPECT_EQ(ctx->last_execution_mode(), "caller-capture");
      }
    } catch (...) {
      kc::ContextGuard guard(0);
      api.StreamEndCapture(caller.get(), &captured);
      if (captured) api.GraphDestroy(captured);
      throw;
    }
    EXPECT_EQ(kc::stream_capture_status(caller.get(), 0), kc::CaptureStatus::kActive)
        << "kilnrt invalidated the caller's capture";
    {
      kc::ContextGuard guard(0);
      ASSERT_EQ(api.StreamEndCapture(caller.get(), &captured), CUDA_SUCCESS);
    }
    ASSERT_NE(captured, nullptr);
    kc::ContextGuard guard(0);
    CUgraphExec exec = nullptr;
    ASSERT_EQ(api.GraphInstantiateWithFlags(&exec, captured, 0), CUDA_SUCCESS);
    for (float f : {1.f, 0.5f}) {
      std::vector<Tensor> scaled_x;
      for (size_t i = 0; i < xs.size(); ++i) {
        scaled_x.push_back(scaled(xs[i], f));
        din[i]->copy_from_host_async(scaled_x[i].raw(), scaled_x[i].nbytes(), caller.get());
      }
      ASSERT_EQ(api.GraphLaunch(exec, caller.get()), CUDA_SUCCESS);
      std::vector<Tensor> got;
      for (size_t i = 0; i < xs.size(); ++i) {
        got.push_back(Tensor::empty(DType::kFloat32, out_shapes[i]));
        dout[i]->copy_to_host_async(got[i].raw(), got[i].nbytes(), caller.get());
      }
      ASSERT_EQ(api.StreamSynchronize(caller.get()), CUDA_SUCCESS);
      for (size_t i = 0; i < xs.size(); ++i) {
        SCOPED_TRACE("replay x" + std::to_string(f) + " tuple " + std::to_string(i));
        expect_close(got[i], cpu->run({{in_name, scaled_x[i]}}).at(out_name));
      }
    }
    api.GraphExecDestroy(exec);
    api.GraphDestroy(captured);
    // Eager use of the same context afterwards still works (warm-up, then kilnrt's own graph).
    for (int call = 0; call < 3; ++call) {
      const Tensor y = ctx->run({{in_name, xs[0]}}).at(out_name);
      expect_close(y, cpu->run({{in_name, xs[0]}}).at(out_name));
    }
  }
}

TEST(CudaBackendEngine, GraphCacheIsBoundedPerShapeTuple) {
  SKIP_WITHOUT_GPU();
  auto engine = cuda_engine_for("transformer_encoder_layer");
  const std::vector<uint8_t> cpu_bytes = build_engine(fixture("transformer_encoder_layer.onnx"));
  auto cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  const Tensor x = load_npy(fixture("transformer_encoder_layer.input.npy"));
  auto ctx = engine->create_context();
  // More shape tuples than graphs kept: evicted ones are captured again when they come back, results stay right.
  for (int round = 0; round < 2; ++round) {
    for (int64_t b = 1; b <= 10; ++b) {
      SCOPED_TRACE("batch " + std::to_string(b));
      const Tensor xb = batch_of(x, b);
      ctx->run({{"x", xb}});
      const Tensor y = ctx->run({{"x", xb}}).at("y");
      EXPECT_TRUE(ctx->last_execution_mode() == "graph-capture" || ctx->last_execution_mode() == "graph-replay")
          << ctx->last_execution_mode();
      if (b <= 3 || b == 10) expect_close(y, cpu->run({{"x", xb}}).at("y"));
    }
  }
}

// ---- precision ---------------------------------------------------------------------------------------------------

TEST_P(CudaFixture, ReducedPrecisionEnginesMatchTorch) {
  SKIP_WITHOUT_GPU();
  const std::string name = GetParam();
  const Tensor x = load_npy(fixture(name + ".input.npy"));
  const Tensor y = load_npy(fixture(name + ".expected.npy"));
  for (const char* p : {"fp16", "bf16", "tf32"}) {
    SCOPED_TRACE(p);
    BuildOptions opt;
    opt.device = "cuda";
    opt.fp16 = std::string(p) == "fp16";
    opt.bf16 = std::string(p) == "bf16";
    opt.tf32 = std::string(p) == "tf32";
    const std::vector<uint8_t> bytes = build_engine(fixture(name + ".onnx"), opt);
    auto engine = Engine::from_bytes(bytes.data(), bytes.size());
    int reduced = 0;
    for (const LayerInfo& l : engine->layers())
      if (l.op_type == "MatMul" || l.op_type == "Gemm" || l.op_type == "FusedMatMul") {  // GEMMs (epilogue-fused too)
        EXPECT_NE(l.tactic.find(p), std::string::npos) << l.name << ": " << l.tactic;
        ++reduced;
      }
    EXPECT_GT(reduced, 0);
    EXPECT_NE(engine->describe().find(p), std::string::npos);
    auto ctx = engine->create_context();
    for (int call = 0; call < 3; ++call) {  // direct, graph capture, graph replay
      const Tensor got = ctx->run({{"x", x}}).at("y");
      std::printf("    %s %s call %d:", name.c_str(), p, call);
      testing_util::expect_close(got, y, std::string(p) == "bf16" ? 0.08 : 0.03, 0.999, true);
    }
  }
}

// Not a timed test (nothing is asserted): prints what graphs save per call on the GPU machine.
TEST(CudaBackendEngine, GraphLatencyReport) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"transformer_encoder_layer", "mobilenet_v3_small"}) {
    auto engine = cuda_engine_for(name);
    const Tensor x = load_npy(fixture(std::string(name) + ".input.npy"));
    kc::Stream stream(0);
    for (bool graphs : {false, true}) {
      auto ctx = engine->create_context();
      ctx->set_cuda_graphs(graphs);
      const Shape out_shape = ctx->output_shapes({{"x", x.shape()}}).at("y");
      kc::DeviceBuffer din(0, x.nbytes()), dout(0, shape_numel(out_shape) * sizeof(float));
      din.copy_from_host_async(x.raw(), x.nbytes(), stream.get());
      std::vector<double> us;
      for (int i = 0; i < 220; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        ctx->enqueue({{"x", DeviceTensor{din.data(), DType::kFloat32, x.shape(), 0}}},
                     {{"y", DeviceTensor{dout.data(), DType::kFloat32, out_shape, 0}}}, stream.get());
        stream.synchronize();
        if (i >= 20)
          us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(us.begin(), us.end());
      std::printf("    %s graphs=%d (%s): median enqueue+sync %.1f us over %zu runs\n", name, int(graphs),
                  ctx->last_execution_mode().c_str(), us[us.size() / 2], us.size());
    }
  }
}
