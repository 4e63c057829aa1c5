// Stress: many threads on one CUDA engine. 16 threads x 1000 runs on the transformer fixture's CUDA engine
// (and 8 x 50 on mobilenet_v3_small: cuDNN convolutions, long graph captures),
// each thread with its own ExecutionContext, alternating the host path (run) and the device path (enqueue on the
// thread's own stream). Every output is checked against the CPU engine; there must be 0 errors; device memory must
// not grow once a warm-up round has sized everything (contexts kept alive), and destroying and recreating all
// contexts must give their memory back. GPU-only: skips with a message without a usable GPU.
//
// Knobs (for quick runs or longer soaks): KILNRT_STRESS_THREADS (16), KILNRT_STRESS_RUNS (1000 per thread).
// Bounded: ~16k small runs; a few seconds on an H100. Timing is printed, never asserted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"

using namespace kilnrt;
namespace kc = kilnrt::cuda;

namespace {

std::string stress_fixture(const std::string& name) {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/" + name;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

// Acceptance metric of the suite: max abs error <= 1e-4 x max|ref| and mean-centred cosine >= 0.99999.
// Returns "" when close, else a description.
std::string compare(const float* a, const float* b, int64_t n) {
  double max_mag = 0, max_err = 0, ma = 0, mb = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) return "non-finite output at element " + std::to_string(i);
    max_mag = std::max(max_mag, std::fabs(double(b[i])));
    max_err = std::max(max_err, std::fabs(double(a[i]) - b[i]));
    ma += a[i];
    mb += b[i];
  }
  ma /= double(n);
  mb /= double(n);
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += (a[i] - ma) * (b[i] - mb);
    na += (a[i] - ma) * (a[i] - ma);
    nb += (b[i] - mb) * (b[i] - mb);
  }
  const double cos = dot / std::sqrt(na * nb + 1e-300);
  if (max_err <= 1e-4 * max_mag && cos >= 0.99999) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "max abs err %.3g (limit %.3g), cosine %.9f", max_err, 1e-4 * max_mag, cos);
  return buf;
}

Tensor repeat_batch(const Tensor& x, int64_t b) {
  Shape s = x.shape();
  const int64_t per = x.numel() / s[0];
  s[0] = b;
  Tensor t = Tensor::empty(x.dtype(), s);
  for (int64_t i = 0; i < b; ++i)
    std::memcpy(t.data<float>() + i * per, x.data<float>() + (i % x.shape()[0]) * per, per * sizeof(float));
  return t;
}

// Free device memory of GPU 0, read under kilnrt's guard through its driver table (the caller's context is kept).
size_t free_device_memory() {
  kc::ContextGuard guard(0);
  size_t free_bytes = 0, total = 0;
  KILNRT_CU_CHECK(guard.api(), guard.api().MemGetInfo(&free_bytes, &total), "stress test");
  return free_bytes;
}

struct Counters {
  std::atomic<long> runs{0}, errors{0}, wrong{0};
  std::mutex mutex;
  std::string first_error, first_wrong;
  void error(const std::string& what) {
    errors++;
    std::lock_guard<std::mutex> lock(mutex);
    if (first_error.empty()) first_error = what;
  }
  void mismatch(const std::string& what) {
    wrong++;
    std::lock_guard<std::mutex> lock(mutex);
    if (first_wrong.empty()) first_wrong = what;
  }
};

// One worker's state: its own context, stream and device buffers, its batch size and reference.
struct Worker {
  int id = 0;
  int64_t batch = 1;
  Tensor x, want;
  std::unique_ptr<ExecutionContext> ctx;
  std::unique_ptr<kc::Stream> stream;
  std::unique_ptr<kc::DeviceBuffer> din, dout;
  std::vector<float> host_out;

  void setup(const Engine& engine) {
    ctx = engine.create_context();
    ctx->set_input_shape("x", x.shape());
    stream = std::make_unique<kc::Stream>(0);
    din = std::make_unique<kc::DeviceBuffer>(0, x.nbytes());
    dout = std::make_unique<kc::DeviceBuffer>(0, want.nbytes());
    host_out.assign(want.numel(), 0.f);
    din->copy_from_host_async(x.raw(), x.nbytes(), stream->get());
    stream->synchronize();
  }
  void teardown() {
    dout.reset();
    din.reset();
    stream.reset();
    ctx.reset();
  }

  void iterate(int runs, Counters& c) {
    for (int i = 0; i < runs; ++i) {
      const std::string where = "thread " + std::to_string(id) + " run " + std::to_string(i);
      try {
        if (i % 2 == 0) {  // host path: pinned staging, own stream, one sync
          auto out = ctx->run({{"x", x}});
          const Tensor& y = out.at("y");
          if (y.shape() != want.shape()) {
            c.mismatch(where + ": wrong output shape");
          } else {
            const std::string diff = compare(y.data<float>(), want.data<float>(), want.numel());
            if (!diff.empty()) c.mismatch(where + " (run): " + diff);
          }
        } else {  // device path: enqueue on the thread's stream, then read back
          std::memset(host_out.data(), 0, host_out.size() * sizeof(float));
          dout->memset_async(0xff, stream->get());  // NaN pattern: stale or missing writes are caught
          ctx->enqueue({{"x", DeviceTensor{din->data(), DType::kFloat32, x.shape(), 0}}},
                       {{"y", DeviceTensor{dout->data(), DType::kFloat32, want.shape(), 0}}}, stream->get());
          dout->copy_to_host_async(host_out.data(), want.nbytes(), stream->get());
          stream->synchronize();
          const std::string diff = compare(host_out.data(), want.data<float>(), want.numel());
          if (!diff.empty()) c.mismatch(where + " (enqueue): " + diff);
        }
      } catch (const std::exception& e) {
        c.error(where + ": " + e.what());
      }
      c.runs++;
    }
  }
};

template <class Fn>
void on_threads(std::vector<Worker>& workers, Fn fn) {
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (auto& w : workers) threads.emplace_back([&w, &fn] { fn(w); });
  for (auto& t : threads) t.join();
}

// `threads` threads x `runs` runs on one CUDA engine of `model`, batches 1..max_batch across threads.
void stress_one_engine(const std::string& model, int threads, int runs, int64_t max_batch) {
  BuildOptions opt;
  opt.device = "cuda";
  const std::vector<uint8_t> bytes = build_engine(stress_fixture(model + ".onnx"), opt);
  std::shared_ptr<Engine> engine = Engine::from_bytes(bytes.data(), bytes.size(), "stress");
  const std::vector<uint8_t> cpu_bytes = build_engine(stress_fixture(model + ".onnx"));
  std::shared_ptr<Engine> cpu = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size(), "stress-cpu");
  const Tensor x0 = load_npy(stress_fixture(model + ".input.npy"));

  // Batches 1..max_batch across threads: contexts with different shape tuples share the engine.
  std::map<int64_t, std::pair<Tensor, Tensor>> refs;
  for (int64_t b = 1; b <= max_batch; ++b) {
    Tensor xb = repeat_batch(x0, b);
    refs[b] = {xb, cpu->run({{"x", xb}}).at("y")};
  }
  std::vector<Worker> workers(threads);
  for (int i = 0; i < threads; ++i) {
    workers[i].id = i;
    workers[i].batch = 1 + i % max_batch;
    workers[i].x = refs[workers[i].batch].first;
    workers[i].want = refs[workers[i].batch].second;
  }

  Counters warm, main_round, again;
  const int warm_runs = 20;
  // Warm-up: each thread creates its context and runs both paths (arena, workspace, handles, descriptors sized).
  on_threads(workers, [&](Worker& w) {
    try {
      w.setup(*engine);
      w.iterate(warm_runs, warm);
    } catch (const std::exception& e) {
      warm.error("setup of thread " + std::to_string(w.id) + ": " + e.what());
    }
  });
  ASSERT_EQ(warm.errors.load(), 0) << warm.first_error;
  ASSERT_EQ(warm.wrong.load(), 0) << warm.first_wrong;
  const size_t free_after_warmup = free_device_memory();

  // Main round: the same contexts (now used from other threads than the ones that made them), `runs` each.
  const auto t0 = std::chrono::steady_clock::now();
  on_threads(workers, [&](Worker& w) { w.iterate(runs, main_round); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t free_after_main = free_device_memory();
  std::printf("    %s: %d threads x %d runs: %ld runs in %.2f s (%.0f runs/s), errors %ld, wrong outputs %ld\n",
              model.c_str(), threads, runs, main_round.runs.load(), seconds, main_round.runs.load() / seconds,
              main_round.errors.load(), main_round.wrong.load());
  EXPECT_EQ(main_round.runs.load(), long(threads) * runs);
  EXPECT_EQ(main_round.errors.load(), 0) << "first error: " << main_round.first_error;
  EXPECT_EQ(main_round.wrong.load(), 0) << "first wrong output: " << main_round.first_wrong;

  // Device memory must not grow once warmed up (2 MiB allocation granularity + slack: 16 MiB; one leaked context
  // alone would cost its 32 MiB workspace).
  const long long slack = 16ll << 20;
  const long long grew = static_cast<long long>(free_after_warmup) - static_cast<long long>(free_after_main);
  std::printf("    free device memory: after warm-up %.1f MiB, after main round %.1f MiB (grew by %.1f MiB)\n",
              free_after_warmup / 1048576.0, free_after_main / 1048576.0, grew / 1048576.0);
  EXPECT_LE(grew, slack) << "device memory grew during the main round";

  // Tear down every context, recreate them on fresh threads, run a short round, tear down again: the memory of a
  // destroyed context comes back (no per-context leak).
  on_threads(workers, [](Worker& w) { w.teardown(); });
  const size_t free_after_teardown = free_device_memory();
  on_threads(workers, [&](Worker& w) {
    try {
      w.setup(*engine);
      w.iterate(50, again);
      w.teardown();
    } catch (const std::exception& e) {
      again.error("recreate in thread " + std::to_string(w.id) + ": " + e.what());
    }
  });
  const size_t free_after_recreate = free_device_memory();
  const long long leaked = static_cast<long long>(free_after_teardown) - static_cast<long long>(free_after_recreate);
  std::printf("    free device memory: after teardown %.1f MiB, after recreate+teardown %.1f MiB (diff %.1f MiB)\n",
              free_after_teardown / 1048576.0, free_after_recreate / 1048576.0, leaked / 1048576.0);
  EXPECT_EQ(again.errors.load(), 0) << again.first_error;
  EXPECT_EQ(again.wrong.load(), 0) << again.first_wrong;
  EXPECT_LE(leaked, slack) << "destroyed contexts did not give their device memory back";

  // One context shared by all threads through run() (own stream, one sync per call): calls are serialised by the
  // context, never interleaved inside its runner (arena, graphs, library handles).
  std::unique_ptr<ExecutionContext> shared = engine->create_context();
  Counters shared_round;
  const int shared_runs = std::max(1, std::min(runs, 50));
  on_threads(workers, [&](Worker& w) {
    for (int i = 0; i < shared_runs; ++i) {
      const std::string where = "shared context, thread " + std::to_string(w.id) + " run " + std::to_string(i);
      try {
        const Tensor y = shared->run({{"x", w.x}}).at("y");
        const std::string diff = compare(y.data<float>(), w.want.data<float>(), w.want.numel());
        if (!diff.empty()) shared_round.mismatch(where + ": " + diff);
      } catch (const std::exception& e) {
        shared_round.error(where + ": " + e.what());
      }
      shared_round.runs++;
    }
  });
  EXPECT_EQ(shared_round.errors.load(), 0) << shared_round.first_error;
  EXPECT_EQ(shared_round.wrong.load(), 0) << shared_round.first_wrong;
}

}  // namespace

TEST(CudaStress, ManyThreadsOneEngineOwnContexts) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU (stress test is GPU-only): " << why;
  stress_one_engine("transformer_encoder_layer", env_int("KILNRT_STRESS_THREADS", 16),
                    env_int("KILNRT_STRESS_RUNS", 1000), 4);
}

// cuDNN convolutions (graph captures that take milliseconds of host time) from 8 threads: the coexistence suite's
// "CUDA graph capture failed ... CUDNN_STATUS_EXECUTION_FAILED" case.
TEST(CudaStress, ManyThreadsOneEngineCudnnLayers) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU (stress test is GPU-only): " << why;
  stress_one_engine("mobilenet_v3_small", 8, 50, 3);
}
