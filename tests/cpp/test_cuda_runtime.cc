// Real-GPU tests of the CUDA foundation: stream / event / buffers round trip, and that every kilnrt call leaves the
// caller's current context and context-stack depth unchanged (no context, primary current, user context current).
// Skipped, with the reason, where no usable GPU exists.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/error.h"

namespace kc = kilnrt::cuda;

namespace {

#define SKIP_WITHOUT_GPU()                            \
  do {                                                \
    std::string why_;                                 \
    if (!kilnrt::cuda_available(&why_)) {             \
      GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
    }                                                 \
  } while (0)

CUcontext current_ctx() {
  const kc::DriverApi& api = kc::driver_api();
  CUcontext c = nullptr;
  EXPECT_EQ(api.CtxGetCurrent(&c), CUDA_SUCCESS);
  return c;
}

// Pops every context the test pushed and checks the stack below is empty (depth restored to 0).
void expect_stack_is(const std::vector<CUcontext>& expected_top_down) {
  const kc::DriverApi& api = kc::driver_api();
  for (CUcontext want : expected_top_down) {
    CUcontext popped = nullptr;
    ASSERT_EQ(api.CtxPopCurrent(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, want);
  }
  EXPECT_EQ(current_ctx(), nullptr) << "context stack deeper than the test left it";
}

// The work every context-state test runs: all of the RAII wrappers, a full round trip and a doctor report.
void round_trip(int device) {
  constexpr size_t kBytes = 1 << 20;
  kc::Stream stream(device);
  kc::PinnedBuffer host(device, kBytes);
  kc::DeviceBuffer a(device, kBytes), b(device, kBytes);
  kc::Event start(device, /*timing=*/true), end(device, /*timing=*/true);
  auto* h = static_cast<unsigned char*>(host.data());
  for (size_t i = 0; i < kBytes; ++i) h[i] = static_cast<unsigned char>(i * 7 + 3);

  start.record(stream);
  a.copy_from_host_async(h, kBytes, stream.get());
  b.memset_async(0, stream.get());
  b.copy_from_device_async(a.data(), kBytes / 2, stream.get());  // first half: pattern, second half: zeros
  end.record(stream);
  stream.synchronize();
  for (size_t i = 0; i < kBytes; ++i) h[i] = 0xEE;
  b.copy_to_host_async(h, kBytes, stream.get());
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  EXPECT_TRUE(end.query());
  for (size_t i = 0; i < kBytes / 2; ++i) ASSERT_EQ(h[i], static_cast<unsigned char>(i * 7 + 3)) << "byte " << i;
  for (size_t i = kBytes / 2; i < kBytes; ++i) ASSERT_EQ(h[i], 0) << "byte " << i;
  EXPECT_GE(kc::Event::elapsed_ms(start, end), 0.f);

  a.memset_async(0x5A, stream.get());
  a.copy_to_host_async(h, 4096, stream.get(), kBytes - 4096);
  kc::Event done(device);
  done.record(stream);
  done.synchronize();
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(h[i], 0x5A);
  EXPECT_FALSE(kilnrt::doctor_report().empty());
}

using CtxCreateFn = CUresult (*)(CUcontext*, unsigned, CUdevice);
using CtxCreateV4Fn = CUresult (*)(CUcontext*, void* params, unsigned, CUdevice);
using CtxDestroyFn = CUresult (*)(CUcontext);

// A user-created context, as pycuda.autoinit / make_context make (test-only: kilnrt never creates contexts).
struct UserContext {
  CUcontext ctx = nullptr;
  CtxDestroyFn destroy = nullptr;
  std::string why;
  explicit UserContext(int device) {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
      why = "libcuda.so.1 not loaded";
      return;
    }
    auto create = reinterpret_cast<CtxCreateFn>(dlsym(lib, "cuCtxCreate_v2"));
    auto create4 = reinterpret_cast<CtxCreateV4Fn>(dlsym(lib, "cuCtxCreate_v4"));
    destroy = reinterpret_cast<CtxDestroyFn>(dlsym(lib, "cuCtxDestroy_v2"));
    if ((!create && !create4) || !destroy) {
      why = "cuCtxCreate_v2/_v4 / cuCtxDestroy_v2 not exported";
      return;
    }
    CUdevice dev = 0;
    kc::driver_api().DeviceGet(&dev, device);
    // pushes the new context: it becomes current
    CUresult r = create ? create(&ctx, 0, dev) : create4(&ctx, nullptr, 0, dev);
    if (r != CUDA_SUCCESS) {
      why = "cuCtxCreate failed: " + kc::driver_error_string(kc::driver_api(), r);
      ctx = nullptr;
    }
  }
  ~UserContext() {
    if (ctx && destroy) destroy(ctx);
  }
};

}  // namespace

TEST(CudaRuntime, RoundTripWithNoCurrentContext) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(current_ctx(), nullptr) << "the test thread should start with no current context";
  round_trip(0);
  EXPECT_EQ(current_ctx(), nullptr);
  expect_stack_is({});
}

TEST(CudaRuntime, RoundTripWithPrimaryCurrentDoesNotPush) {
  SKIP_WITHOUT_GPU();
  const kc::DriverApi& api = kc::driver_api();
  CUcontext primary = kc::primary_context(0);
  ASSERT_EQ(api.CtxPushCurrent(primary), CUDA_SUCCESS);
  {
    kc::ContextGuard guard(0);
    EXPECT_FALSE(guard.pushed());
  }
  round_trip(0);
  EXPECT_EQ(current_ctx(), primary);
  expect_stack_is({primary});
}

TEST(CudaRuntime, RoundTripWithUserContextCurrentRestoresIt) {
  SKIP_WITHOUT_GPU();
  UserContext user(0);
  if (!user.ctx) GTEST_SKIP() << "cannot create a user context: " << user.why;
  ASSERT_EQ(current_ctx(), user.ctx);
  {
    kc::ContextGuard guard(0);
    EXPECT_TRUE(guard.pushed());
    EXPECT_EQ(current_ctx(), kc::primary_context(0));
  }
  round_trip(0);
  EXPECT_EQ(current_ctx(), user.ctx);
  expect_stack_is({user.ctx});
}

TEST(CudaRuntime, ErrorInsideGuardRestoresUserContext) {
  SKIP_WITHOUT_GPU();
  UserContext user(0);
  if (!user.ctx) GTEST_SKIP() << "cannot create a user context: " << user.why;
  kc::DeviceBuffer d(0, 16);
  char host[64];
  EXPECT_THROW(d.copy_to_host_async(host, 64, nullptr), kilnrt::Error);  // range error
  EXPECT_THROW(kc::DeviceBuffer(0, size_t(1) << 50), kilnrt::Error);     // 1 PiB: out of memory
  EXPECT_THROW(kc::Stream(1 << 20), kilnrt::Error);                      // no such device
  EXPECT_EQ(current_ctx(), user.ctx);
  expect_stack_is({user.ctx});
}

TEST(CudaRuntime, OutOfMemoryIsReportedAsSuch) {
  SKIP_WITHOUT_GPU();
  try {
    kc::DeviceBuffer huge(0, size_t(1) << 50);
    FAIL() << "allocating 1 PiB succeeded";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kOutOfMemory) << e.what();
  }
  expect_stack_is({});
}

TEST(CudaRuntime, ThreadsWithoutContextWork) {
  SKIP_WITHOUT_GPU();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &ok] {
      try {
        kc::Stream s(0);
        kc::DeviceBuffer d(0, 1024);
        d.memset_async(static_cast<unsigned char>(t), s.get());
        unsigned char h[1024];
        d.copy_to_host_async(h, sizeof(h), s.get());
        s.synchronize();
        CUcontext c = nullptr;
        kc::driver_api().CtxGetCurrent(&c);
        ok[t] = (h[0] == t && h[1023] == t && c == nullptr) ? 1 : 0;
      } catch (...) {
        ok[t] = 0;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
}

TEST(CudaRuntime, DoctorDescribesTheGpuAndLeavesContext) {
  SKIP_WITHOUT_GPU();
  std::string report = kilnrt::doctor_report();
  EXPECT_NE(report.find("GPU 0:"), std::string::npos) << report;
  EXPECT_NE(report.find("driver: supports CUDA"), std::string::npos) << report;
  EXPECT_NE(report.find("SMs"), std::string::npos) << report;
  std::printf("%s", report.c_str());
  expect_stack_is({});
}

TEST(CudaRuntime, ChildForkedAfterInitGetsAClearError) {
  SKIP_WITHOUT_GPU();
  { kc::Stream warm(0); }  // CUDA is initialised in this (parent) process now
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 1;
    try {
      kc::Stream s(0);
    } catch (const kilnrt::Error& e) {
      code = std::string(e.message()).find("before fork()") != std::string::npos ? 0 : 2;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child used the GPU, 2: wrong message, 3: wrong exception";
  kc::Stream after(0);  // the parent still works
  EXPECT_TRUE(after);
  expect_stack_is({});
}
