// Engine features on the GPU: per-layer precision overrides in CUDA engines, mark_all_outputs of a CUDA
// fp16 engine against a CPU engine (per-tensor error report), activation memory (the stored figure is the arena the
// runner lays out at the profile's max; contexts never grow within the profile; caller-provided memory and its
// checks), and one engine with 4 contexts on 4 streams driven from 4 threads. Skips with a message without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"
#include "engine/activation_memory.h"
#include "engine/engine_file.h"
#include "engine/engine_impl.h"
#include "engine_features_model.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"

using namespace kilnrt;
using namespace kilnrt::enginetest;
namespace kc = kilnrt::cuda;

namespace {

#define SKIP_WITHOUT_GPU()                                                      \
  do {                                                                          \
    std::string why_;                                                           \
    if (!cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

constexpr int64_t kIn = 64, kHidden = 256, kOut = 32;

std::string temp(const std::string& name) { return testing::TempDir() + "/kilnrt_cuda_engine_features_" + name; }
std::string fixture(const std::string& name) {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/" + name;
}

std::string mlp_file() { return write_model(temp("mlp.onnx"), mlp_model(kIn, kHidden, kOut, {"y"})); }

std::shared_ptr<Engine> build(const std::string& model, const BuildOptions& o) {
  const std::vector<uint8_t> bytes = build_engine(model, o);
  return Engine::from_bytes(bytes.data(), bytes.size());
}

BuildOptions cuda_options(int64_t min_b = 1, int64_t opt_b = 16, int64_t max_b = 64) {
  BuildOptions o;
  o.device = "cuda";
  o.profiles = {{InputProfile{"x", {min_b, kIn}, {opt_b, kIn}, {max_b, kIn}}}};
  return o;
}

// layer name -> precision; the first GEMM is listed as "mm" whether the passes fused its bias ("mm/fused_matmul",
// com.kilnrt:FusedMatMul) or not.
std::map<std::string, std::string> precisions(const Engine& e) {
  std::map<std::string, std::string> m;
  for (const LayerInfo& l : e.layers()) m[l.name.rfind("mm/", 0) == 0 ? "mm" : l.name] = l.precision;
  EXPECT_EQ(m.count("mm"), 1u) << "no first GEMM layer";
  return m;
}

// Device buffers for x / y at the largest batch (allocated once: no cuMemAlloc / cuMemFree between runs).
struct IoBuffers {
  kc::DeviceBuffer dx{0, 64 * kIn * 4}, dy{0, 64 * kOut * 4};
};

// Runs `ctx` on device memory with enqueue() on `s`; returns y on the host.
Tensor enqueue_once(ExecutionContext& ctx, const Tensor& x, const kc::Stream& s, IoBuffers& io) {
  kc::StreamHandle stream = s.get();
  const int64_t b = x.shape()[0];
  kc::DeviceBuffer& dx = io.dx;
  kc::DeviceBuffer& dy = io.dy;
  dx.copy_from_host_async(x.raw(), x.nbytes(), stream);
  ctx.enqueue({{"x", DeviceTensor{dx.data(), DType::kFloat32, {b, kIn}, 0}}},
              {{"y", DeviceTensor{dy.data(), DType::kFloat32, {b, kOut}, 0}}}, stream);
  Tensor y = Tensor::empty(DType::kFloat32, {b, kOut});
  dy.copy_to_host_async(y.raw(), y.nbytes(), stream);
  s.synchronize();
  return y;
}

}  // namespace

TEST(CudaEngineFeatures, LayerPrecisionOverrides) {
  SKIP_WITHOUT_GPU();
  const std::string model = mlp_file();
  auto cpu = build(model, BuildOptions{});
  const Tensor x = random_input(16, kIn, 11);
  const Tensor want = cpu->run({{"x", x}}).at("y");

  BuildOptions o = cuda_options();
  o.fp16 = true;
  o.layer_precisions = {{"Softmax", "fp32"}};
  auto e = build(model, o);
  auto p = precisions(*e);
  EXPECT_EQ(p["softmax"], "fp32");  // a float32 island in a 16-bit engine
  EXPECT_EQ(p["mm"], "fp16");
  if (p.count("shape")) EXPECT_EQ(p["shape"], "host");  // the shape computation, when the passes keep it
  EXPECT_NE(e->describe().find("'softmax' [cuda:"), std::string::npos);
  const double err16 = relative_error(e->run({{"x", x}}).at("y"), want);
  std::printf("    fp16 engine, Softmax fp32: rel err %.3g\n", err16);
  EXPECT_LT(err16, 2e-2);

  // Everything pinned to fp32 but one layer: all device layers fp32 except relu.
  o.layer_precisions = {{"*", "fp32"}, {"relu", "fp16"}};
  auto mixed = build(model, o);
  p = precisions(*mixed);
  EXPECT_EQ(p["relu"], "fp16");
  EXPECT_EQ(p["mm"], "fp32");
  EXPECT_EQ(p["mm2"], "fp32");
  const double err_mixed = relative_error(mixed->run({{"x", x}}).at("y"), want);
  std::printf("    fp16 engine, all fp32 but relu: rel err %.3g\n", err_mixed);
  EXPECT_LT(err_mixed, 2e-2);

  // --tf32 with a strict layer; and the float32-engine error.
  BuildOptions t = cuda_options();
  t.tf32 = true;
  t.layer_precisions = {{"mm2", "fp32"}};
  p = precisions(*build(model, t));
  EXPECT_EQ(p["mm"], "tf32");
  EXPECT_EQ(p["mm2"], "fp32");
  BuildOptions bad = cuda_options();
  bad.layer_precisions = {{"relu", "fp16"}};
  expect_error([&] { build_engine(model, bad); }, ErrorCode::kInvalidArgument, "inside a float32 engine");
}

TEST(CudaEngineFeatures, MarkAllOutputsCudaVsCpu) {
  SKIP_WITHOUT_GPU();
  // float32 CUDA engine of the small model: every intermediate equals the CPU engine's closely.
  BuildOptions o = cuda_options();
  o.mark_all_outputs = true;
  const std::string model = mlp_file();
  auto gpu = build(model, o);
  BuildOptions c;
  c.mark_all_outputs = true;
  auto cpu = build(model, c);
  ASSERT_EQ(gpu->outputs().size(), cpu->outputs().size());
  const Tensor x = random_input(5, kIn, 3);
  auto got = gpu->run({{"x", x}});
  auto want = cpu->run({{"x", x}});
  for (const TensorInfo& t : cpu->outputs()) EXPECT_LE(relative_error(got.at(t.name), want.at(t.name)), 1e-5) << t.name;

  // fp16 CUDA engines of the dynamo fixtures against CPU engines, tensor by tensor (a report, not a hunt:
  // the final output must be close, the first tensor above 1e-2 is printed).
  for (const std::string name : {"transformer_encoder_layer", "mobilenet_v3_small"}) {
    SCOPED_TRACE(name);
    BuildOptions g;
    g.device = "cuda";
    g.fp16 = true;
    g.mark_all_outputs = true;
    auto e16 = build(fixture(name + ".onnx"), g);
    auto ref = build(fixture(name + ".onnx"), c);
    ASSERT_EQ(e16->outputs().size(), ref->outputs().size());
    EXPECT_GT(ref->outputs().size(), 10u);
    const Tensor in = load_npy(fixture(name + ".input.npy"));
    auto a = e16->run({{"x", in}});
    auto b = ref->run({{"x", in}});
    std::string first_bad;
    double worst = 0;
    std::string worst_name;
    size_t compared = 0;
    for (const TensorInfo& t : ref->outputs()) {
      if (t.dtype != DType::kFloat32) continue;
      const double err = relative_error(a.at(t.name), b.at(t.name));
      ++compared;
      if (err > 1e-2 && first_bad.empty()) first_bad = t.name + " (" + std::to_string(err) + ")";
      if (err > worst) {
        worst = err;
        worst_name = t.name;
      }
    }
    std::printf("    %s fp16 vs CPU: %zu float tensors, first above 1e-2: %s, worst %.3g at %s, output y %.3g\n",
                name.c_str(), compared, first_bad.empty() ? "none" : first_bad.c_str(), worst, worst_name.c_str(),
                relative_error(a.at("y"), b.at("y")));
    EXPECT_LT(relative_error(a.at("y"), b.at("y")), 5e-2);
  }
}

TEST(CudaEngineFeatures, ActivationMemoryAtProfileMax) {
  SKIP_WITHOUT_GPU();
  auto e = build(mlp_file(), cuda_options(1, 16, 64));
  ASSERT_EQ(e->activation_memory_sizes().size(), 1u);
  const size_t size = e->activation_memory_size();
  EXPECT_GT(size, size_t(64 * kHidden * 4));  // at least one [64, 256] float activation
  const auto& plan = *e->impl().cuda_plan;
  backends::cuda::CudaRunner probe(plan);
  EXPECT_EQ(probe.arena_bytes_for({{64, kIn}}), size);  // the stored figure is the runner's own layout
  EXPECT_NE(e->describe().find("activation memory at profile 0 max"), std::string::npos) << e->describe();
  {
    // An engine written before the figure was stored (no blob) still loads, and measures it at load.
    const std::vector<uint8_t> bytes = build_engine(mlp_file(), cuda_options(1, 16, 64));
    engine::LoadedEngine old = engine::deserialize_engine(bytes.data(), bytes.size(), "new.engine");
    ASSERT_EQ(old.meta.blobs.erase(engine::kActivationMemoryBlob), 1u);
    const std::vector<uint8_t> old_bytes = engine::serialize_engine(old.graph, old.meta);
    EXPECT_EQ(Engine::from_bytes(old_bytes.data(), old_bytes.size(), "old.engine")->activation_memory_size(), size);
  }
  // A runner reserved at the max never grows within the profile.
  {
    kc::ContextGuard guard(0);
    kc::Stream stream(0);
    backends::cuda::CudaRunner runner(plan);
    runner.reserve_arena(size);
    for (int64_t b : {1, 64, 7, 33, 64, 2}) {
      runner.prepare({{b, kIn}}, static_cast<backends::cuda::StreamT>(stream.get()));
      EXPECT_LE(runner.prepared_arena_bytes(), size) << "batch " << b;
      EXPECT_EQ(runner.arena_capacity(), size) << "batch " << b;
    }
  }
  // Figures of the fixtures (reported), and an engine without a bounding profile.
  for (const std::string name : {"mobilenet_v3_small", "transformer_encoder_layer"}) {
    BuildOptions o;
    o.device = "cuda";
    auto dynamic = build(fixture(name + ".onnx"), o);
    const Tensor in = load_npy(fixture(name + ".input.npy"));
    Shape s1 = in.shape(), s32 = in.shape();
    s32[0] = 32;
    o.profiles = {{InputProfile{"x", s1, s1, s32}}};
    auto bounded = build(fixture(name + ".onnx"), o);
    o.fp16 = true;
    auto half = build(fixture(name + ".onnx"), o);
    std::printf("    %s: activation memory batch %lld..32: fp32 %.2f MiB, fp16 %.2f MiB; without profile: %lld\n",
                name.c_str(), static_cast<long long>(s1[0]), bounded->activation_memory_size() / 1048576.0,
                half->activation_memory_size() / 1048576.0,
                static_cast<long long>(
                    dynamic->activation_memory_sizes().empty() ? -2 : dynamic->activation_memory_sizes()[0]));
    if (dynamic->inputs()[0].shape[0] < 0) EXPECT_EQ(dynamic->activation_memory_sizes(), std::vector<int64_t>{-1});
    EXPECT_GT(bounded->activation_memory_size(), 0u);
    EXPECT_GT(half->activation_memory_size(), 0u);
  }
}

TEST(CudaEngineFeatures, CallerProvidedActivationMemory) {
  SKIP_WITHOUT_GPU();
  const std::string model = mlp_file();
  auto e = build(model, cuda_options());
  auto cpu = build(model, BuildOptions{});
  const size_t size = e->activation_memory_size();
  const Tensor x = random_input(64, kIn, 5);
  const Tensor want = cpu->run({{"x", x}}).at("y");

  auto ctx = e->create_context(ContextOptions{false});
  expect_error([&] { ctx->run({{"x", x}}); }, ErrorCode::kInvalidArgument, "call set_activation_memory()");
  kc::DeviceBuffer memory(0, size + 512);
  expect_error([&] { ctx->set_activation_memory(nullptr, size); }, ErrorCode::kInvalidArgument, "null");
  expect_error([&] { ctx->set_activation_memory(memory.data(), size - 256); }, ErrorCode::kInvalidArgument,
               "too small");
  expect_error([&] { ctx->set_activation_memory(static_cast<char*>(memory.data()) + 16, size); },
               ErrorCode::kInvalidArgument, "256-byte aligned");
  std::vector<char> host(size + 256);
  void* host_aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(host.data()) + 255) / 256 * 256);
  expect_error([&] { ctx->set_activation_memory(host_aligned, size); }, ErrorCode::kInvalidArgument,
               "activation memory");
  ctx->set_activation_memory(memory.data(), size);
  EXPECT_LE(relative_error(ctx->run({{"x", x}}).at("y"), want), 1e-5);
  kc::Stream stream(0);
  IoBuffers io;
  for (int i = 0; i < 3; ++i)  // direct, graph capture, graph replay
    EXPECT_LE(relative_error(enqueue_once(*ctx, x, stream, io), want), 1e-5) << "call " << i;
  // The same context on other memory (the earlier graphs addressed the old one).
  kc::DeviceBuffer other(0, size);
  ctx->set_activation_memory(other.data(), size);
  EXPECT_LE(relative_error(enqueue_once(*ctx, x, stream, io), want), 1e-5);
  EXPECT_LE(relative_error(enqueue_once(*ctx, x, stream, io), want), 1e-5);
  // A context that allocated its own memory can switch to the caller's too.
  auto own = e->create_context();
  EXPECT_LE(relative_error(own->run({{"x", x}}).at("y"), want), 1e-5);
  own->set_activation_memory(memory.data(), size);
  EXPECT_LE(relative_error(own->run({{"x", x}}).at("y"), want), 1e-5);
}

class CudaEngineFeaturesThreads : public testing::TestWithParam<bool> {};

TEST_P(CudaEngineFeaturesThreads, FourContextsOnFourStreams) {
  SKIP_WITHOUT_GPU();
  const bool caller_memory = GetParam();
  const std::string model = mlp_file();
  auto e = build(model, cuda_options(1, 16, 64));
  auto cpu = build(model, BuildOptions{});
  constexpr int kThreads = 4, kIters = 24;
  // Inputs and CPU references, prepared up front.
  std::vector<std::vector<Tensor>> xs(kThreads), want(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIters; ++i) {
      const int64_t b = 1 + (t * 17 + i * 5) % 64;
      xs[t].push_back(random_input(b, kIn, 1000 * t + i));
      want[t].push_back(cpu->run({{"x", xs[t].back()}}).at("y"));
    }
  std::vector<std::unique_ptr<ExecutionContext>> ctxs;
  std::vector<kc::DeviceBuffer> memory;
  for (int t = 0; t < kThreads; ++t) {
    ctxs.push_back(e->create_context(ContextOptions{!caller_memory}));
    if (caller_memory) {
      memory.emplace_back(0, e->activation_memory_size());
      ctxs.back()->set_activation_memory(memory.back().data(), memory.back().size());
    }
  }
  std::atomic<int> ready{0};
  std::mutex m;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        kc::Stream stream(0);
        IoBuffers io;
        ++ready;
        while (ready.load() < kThreads) std::this_thread::yield();
        for (int i = 0; i < kIters; ++i) {
          const double err = relative_error(enqueue_once(*ctxs[t], xs[t][i], stream, io), want[t][i]);
          if (!(err <= 1e-5)) {
            std::lock_guard<std::mutex> lock(m);
            failures.push_back("thread " + std::to_string(t) + " iteration " + std::to_string(i) + ": rel err " +
                               std::to_string(err));
          }
        }
      } catch (const std::exception& ex) {
        std::lock_guard<std::mutex> lock(m);
        failures.push_back("thread " + std::to_string(t) + ": " + ex.what());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_TRUE(failures.empty());
  for (auto& c : ctxs) EXPECT_NE(c->last_execution_mode(), "");
}

INSTANTIATE_TEST_SUITE_P(Memory, CudaEngineFeaturesThreads, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "CallerMemory" : "OwnMemory"; });
