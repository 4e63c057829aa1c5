// The context guard, the RAII wrappers and the fork/exit flags against a fake driver table that models a per-thread
// context stack. Runs everywhere: no GPU or driver needed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/error.h"

namespace kc = kilnrt::cuda;

namespace {

// ---- the fake driver ---------------------------------------------------------------------------------------
constexpr int kFakeDevices = 2;
char g_primary_storage[kFakeDevices];
char g_user_storage;
char g_stream_storage[64];
char g_event_storage[64];

CUcontext primary_of(int d) { return reinterpret_cast<CUcontext>(&g_primary_storage[d]); }
CUcontext user_ctx() { return reinterpret_cast<CUcontext>(&g_user_storage); }

struct FakeState {
  int retains = 0, pushes = 0, pops = 0;
  int fail_next_push = 0, fail_next_pop = 0;
  int streams_live = 0, events_live = 0, allocs_live = 0, host_allocs_live = 0;
  int frees = 0;
  size_t oom_above = size_t(1) << 40;
  std::vector<CUcontext> created_in;  // the current context at each create / alloc call
  std::vector<CUcontext> freed_in;    // the current context at each destroy / free call
};
FakeState g;
thread_local std::vector<CUcontext> t_stack;  // the calling thread's context stack: back() is current

CUcontext current() { return t_stack.empty() ? nullptr : t_stack.back(); }

CUresult fInit(unsigned) { return CUDA_SUCCESS; }
CUresult fGetErrorName(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_OUT_OF_MEMORY     ? "CUDA_ERROR_OUT_OF_MEMORY"
       : r == CUDA_ERROR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
                                         : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult fGetErrorString(CUresult, const char** s) {
  *s = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult fDeviceGetCount(int* n) {
  *n = kFakeDevices;
  return CUDA_SUCCESS;
}
CUresult fDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal < 0 || ordinal >= kFakeDevices) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult fPrimaryRetain(CUcontext* c, CUdevice d) {
  ++g.retains;
  *c = primary_of(d);
  return CUDA_SUCCESS;
}
CUresult fCtxGetCurrent(CUcontext* c) {
  *c = current();
  return CUDA_SUCCESS;
}
CUresult fCtxPush(CUcontext c) {
  if (g.fail_next_push > 0) {
    --g.fail_next_push;
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ++g.pushes;
  t_stack.push_back(c);
  return CUDA_SUCCESS;
}
CUresult fCtxPop(CUcontext* c) {
  if (g.fail_next_pop > 0) {
    --g.fail_next_pop;
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (t_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  ++g.pops;
  if (c) *c = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult needs_ctx() { return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult fStreamCreate(CUstream* s, unsigned) {
  if (needs_ctx() != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  g.created_in.push_back(current());
  *s = reinterpret_cast<CUstream>(&g_stream_storage[g.streams_live++ % 64]);
  return CUDA_SUCCESS;
}
CUresult fStreamDestroy(CUstream) {
  g.freed_in.push_back(current());
  --g.streams_live;
  return CUDA_SUCCESS;
}
CUresult fEventCreate(CUevent* e, unsigned) {
  if (needs_ctx() != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  g.created_in.push_back(current());
  *e = reinterpret_cast<CUevent>(&g_event_storage[g.events_live++ % 64]);
  return CUDA_SUCCESS;
}
CUresult fEventDestroy(CUevent) {
  g.freed_in.push_back(current());
  --g.events_live;
  return CUDA_SUCCESS;
}
CUresult fMemAlloc(CUdeviceptr* p, size_t n) {
  if (needs_ctx() != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  if (n > g.oom_above) return CUDA_ERROR_OUT_OF_MEMORY;
  g.created_in.push_back(current());
  ++g.allocs_live;
  *p = 0x10000;
  return CUDA_SUCCESS;
}
CUresult fMemFree(CUdeviceptr) {
  g.freed_in.push_back(current());
  --g.allocs_live;
  ++g.frees;
  return CUDA_SUCCESS;
}
CUresult fMemHostAlloc(void** p, size_t n, unsigned) {
  if (needs_ctx() != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  g.created_in.push_back(current());
  ++g.host_allocs_live;
  *p = ::operator new(n);
  return CUDA_SUCCESS;
}
CUresult fMemFreeHost(void* p) {
  g.freed_in.push_back(current());
  --g.host_allocs_live;
  ::operator delete(p);
  return CUDA_SUCCESS;
}

kc::DriverApi make_fake() {
  kc::DriverApi a;
  a.Init = fInit;
  a.GetErrorName = fGetErrorName;
  a.GetErrorString = fGetErrorString;
  a.DeviceGetCount = fDeviceGetCount;
  a.DeviceGet = fDeviceGet;
  a.DevicePrimaryCtxRetain = fPrimaryRetain;
  a.CtxGetCurrent = fCtxGetCurrent;
  a.CtxPushCurrent = fCtxPush;
  a.CtxPopCurrent = fCtxPop;
  a.StreamCreate = fStreamCreate;
  a.StreamDestroy = fStreamDestroy;
  a.EventCreate = fEventCreate;
  a.EventDestroy = fEventDestroy;
  a.MemAlloc = fMemAlloc;
  a.MemFree = fMemFree;
  a.MemHostAlloc = fMemHostAlloc;
  a.MemFreeHost = fMemFreeHost;
  return a;
}
const kc::DriverApi g_fake = make_fake();

class CudaGuardFake : public ::testing::Test {
 protected:
  void SetUp() override {
    g = FakeState();
    t_stack.clear();
    saved_initialised_ = kc::cuda_initialised();
    kc::set_driver_api_for_testing(&g_fake);
    kc::reset_primary_contexts_for_testing();
  }
  void TearDown() override {
    kc::set_driver_api_for_testing(nullptr);
    kc::reset_primary_contexts_for_testing();
    kc::set_cuda_state_for_testing(saved_initialised_, false);
    t_stack.clear();
  }
  bool saved_initialised_ = false;
};

}  // namespace

TEST_F(CudaGuardFake, NoCurrentContextPushesAndPops) {
  ASSERT_EQ(current(), nullptr);
  {
    kc::ContextGuard guard(0);
    EXPECT_TRUE(guard.pushed());
    EXPECT_EQ(current(), primary_of(0));
    EXPECT_EQ(t_stack.size(), 1u);
  }
  EXPECT_EQ(current(), nullptr);
  EXPECT_EQ(t_stack.size(), 0u);
  EXPECT_EQ(g.pushes, 1);
  EXPECT_EQ(g.pops, 1);
}

TEST_F(CudaGuardFake, PrimaryAlreadyCurrentDoesNotPush) {
  t_stack.push_back(kc::primary_context(0));
  {
    kc::ContextGuard guard(0);
    EXPECT_FALSE(guard.pushed());
    EXPECT_EQ(current(), primary_of(0));
  }
  EXPECT_EQ(g.pushes, 0);
  EXPECT_EQ(g.pops, 0);
  EXPECT_EQ(t_stack.size(), 1u);
  EXPECT_EQ(current(), primary_of(0));
}

TEST_F(CudaGuardFake, UserContextIsRestored) {
  t_stack.push_back(user_ctx());
  {
    kc::ContextGuard guard(1);
    EXPECT_TRUE(guard.pushed());
    EXPECT_EQ(current(), primary_of(1));
    EXPECT_EQ(t_stack.size(), 2u);
  }
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(t_stack.size(), 1u);
}

TEST_F(CudaGuardFake, OtherDevicesPrimaryIsRestored) {
  t_stack.push_back(kc::primary_context(0));
  {
    kc::ContextGuard guard(1);
    EXPECT_EQ(current(), primary_of(1));
  }
  EXPECT_EQ(current(), primary_of(0));
  EXPECT_EQ(t_stack.size(), 1u);
}

TEST_F(CudaGuardFake, ExceptionInsideScopeRestores) {
  t_stack.push_back(user_ctx());
  try {
    kc::ContextGuard guard(0);
    ASSERT_EQ(current(), primary_of(0));
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(t_stack.size(), 1u);
  EXPECT_EQ(g.pushes, 1);
  EXPECT_EQ(g.pops, 1);
}

TEST_F(CudaGuardFake, NestedGuards) {
  t_stack.push_back(user_ctx());
  {
    kc::ContextGuard outer(0);
    EXPECT_TRUE(outer.pushed());
    {
      kc::ContextGuard same(0);
      EXPECT_FALSE(same.pushed());
      {
        kc::ContextGuard other(1);
        EXPECT_TRUE(other.pushed());
        EXPECT_EQ(current(), primary_of(1));
        EXPECT_EQ(t_stack.size(), 3u);
      }
      EXPECT_EQ(current(), primary_of(0));
    }
    EXPECT_EQ(current(), primary_of(0));
    EXPECT_EQ(t_stack.size(), 2u);
  }
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(t_stack.size(), 1u);
  EXPECT_EQ(g.pushes, 2);
  EXPECT_EQ(g.pops, 2);
}

TEST_F(CudaGuardFake, PrimaryContextRetainedOnce) {
  for (int i = 0; i < 5; ++i) {
    kc::ContextGuard a(0);
    kc::ContextGuard b(1);
  }
  EXPECT_EQ(g.retains, 2);
  EXPECT_EQ(kc::retained_primary_context(0), primary_of(0));
  EXPECT_EQ(kc::retained_primary_context(1), primary_of(1));
}

TEST_F(CudaGuardFake, PerThreadStacksAreIndependent) {
  t_stack.push_back(user_ctx());
  std::thread worker([] {
    {
      kc::ContextGuard guard(0);
      EXPECT_EQ(current(), primary_of(0));
    }
    EXPECT_EQ(current(), nullptr);
    EXPECT_TRUE(t_stack.empty());
  });
  worker.join();
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(g.retains, 1);
}

TEST_F(CudaGuardFake, BadDeviceIsInvalidArgumentAndLeavesStack) {
  t_stack.push_back(user_ctx());
  try {
    kc::ContextGuard guard(7);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.message()).find("does not exist"), std::string::npos) << e.message();
  }
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(t_stack.size(), 1u);
}

TEST_F(CudaGuardFake, PushFailureThrowsCudaErrorWithExpression) {
  g.fail_next_push = 1;
  try {
    kc::ContextGuard guard(0);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kCuda);
    EXPECT_NE(e.message().find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << e.message();
    EXPECT_NE(e.expression().find("CtxPushCurrent"), std::string::npos) << e.expression();
    EXPECT_FALSE(e.file().empty());
    EXPECT_GT(e.line(), 0);
  }
  EXPECT_TRUE(t_stack.empty());
}

TEST_F(CudaGuardFake, PopFailureInDestructorDoesNotThrow) {
  EXPECT_NO_THROW({
    kc::ContextGuard guard(0);
    g.fail_next_pop = 1;
  });
  // The failed pop left the primary context pushed: the fake models a broken driver. Clean up for the fixture.
  EXPECT_EQ(t_stack.size(), 1u);
}

TEST_F(CudaGuardFake, ResourcesAreCreatedAndFreedInPrimaryContextAndLeaveUserContext) {
  t_stack.push_back(user_ctx());
  {
    kc::Stream s(0);
    kc::Event e(0, /*timing=*/true);
    kc::DeviceBuffer d(0, 256);
    kc::PinnedBuffer p(0, 256);
    EXPECT_TRUE(s && e && d && p);
    EXPECT_EQ(d.size(), 256u);
    EXPECT_EQ(current(), user_ctx());
    EXPECT_EQ(t_stack.size(), 1u);
    EXPECT_EQ(g.streams_live, 1);
    EXPECT_EQ(g.events_live, 1);
    EXPECT_EQ(g.allocs_live, 1);
    EXPECT_EQ(g.host_allocs_live, 1);
  }
  EXPECT_EQ(g.streams_live, 0);
  EXPECT_EQ(g.events_live, 0);
  EXPECT_EQ(g.allocs_live, 0);
  EXPECT_EQ(g.host_allocs_live, 0);
  ASSERT_EQ(g.created_in.size(), 4u);
  ASSERT_EQ(g.freed_in.size(), 4u);
  for (CUcontext c : g.created_in) EXPECT_EQ(c, primary_of(0));
  for (CUcontext c : g.freed_in) EXPECT_EQ(c, primary_of(0));
  EXPECT_EQ(current(), user_ctx());
  EXPECT_EQ(t_stack.size(), 1u);
}

TEST_F(CudaGuardFake, MoveTransfersOwnershipAndFreesOnce) {
  {
    kc::DeviceBuffer a(1, 64);
    kc::DeviceBuffer b(std::move(a));
    EXPECT_FALSE(a);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_TRUE(b);
    EXPECT_EQ(b.device(), 1);
    kc::DeviceBuffer c;
    c = std::move(b);
    EXPECT_TRUE(c);
    kc::Stream s1(0), s2(0);
    s1 = std::move(s2);  // destroys s1's old stream
    EXPECT_EQ(g.streams_live, 1);
  }
  EXPECT_EQ(g.frees, 1);
  EXPECT_EQ(g.allocs_live, 0);
  EXPECT_EQ(g.streams_live, 0);
  EXPECT_TRUE(t_stack.empty());
}

TEST_F(CudaGuardFake, OutOfMemoryIsKOutOfMemoryAndLeavesStack) {
  g.oom_above = 1024;
  try {
    kc::DeviceBuffer big(0, 4096);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kOutOfMemory);
    EXPECT_NE(e.message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(t_stack.empty());
  EXPECT_EQ(g.allocs_live, 0);
}

TEST_F(CudaGuardFake, RangeChecksOnCopies) {
  kc::DeviceBuffer d(0, 16);
  char host[32] = {0};
  EXPECT_THROW(d.copy_from_host_async(host, 17, nullptr), kilnrt::Error);
  EXPECT_THROW(d.copy_to_host_async(host, 8, nullptr, 9), kilnrt::Error);
  EXPECT_TRUE(t_stack.empty());
}

TEST_F(CudaGuardFake, NoCleanupWhenNotAllowedLeaksInsteadOfCallingDriver) {
  kc::DeviceBuffer d(0, 16);
  kc::set_cuda_state_for_testing(true, /*forked_child=*/true);
  EXPECT_FALSE(kc::cleanup_allowed());
  d.reset();  // must not call cuMemFree in a forked child
  kc::set_cuda_state_for_testing(true, false);
  EXPECT_EQ(g.frees, 0);
  EXPECT_EQ(g.allocs_live, 1);
}

TEST_F(CudaGuardFake, ChildForkedAfterInitRefusesGpuEntry) {
  kc::note_cuda_initialised();  // installs the atfork handler, as the real loader does after cuInit
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    if (!kc::forked_after_cuda_init()) code = 2;
    try {
      kc::ContextGuard guard(0);
      code = 3;  // must not get here
    } catch (const kilnrt::Error& e) {
      std::string m = e.message();
      if (e.code() != kilnrt::ErrorCode::kCuda || m.find("fork") == std::string::npos ||
          m.find("spawn") == std::string::npos)
        code = 4;
    } catch (...) {
      code = 5;
    }
    std::string why;
    if (kc::try_driver_api(&why) != nullptr || why.empty()) code = 6;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child exit code (2: not marked, 3: guard worked, 4: bad message)";
  EXPECT_FALSE(kc::forked_after_cuda_init());  // the parent is unaffected
  kc::ContextGuard guard(0);
  EXPECT_EQ(current(), primary_of(0));
}

TEST_F(CudaGuardFake, ChildForkedBeforeInitIsFine) {
  kc::note_cuda_initialised();                   // make sure the handler is installed...
  kc::set_cuda_state_for_testing(false, false);  // ...but model a parent that never initialised CUDA
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    if (kc::forked_after_cuda_init()) code = 2;
    try {
      kc::ContextGuard guard(0);
      if (current() != primary_of(0)) code = 3;
    } catch (...) {
      code = 4;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CudaDriverTable, ErrorStringFallsBackToNumber) {
  kc::DriverApi empty;
  EXPECT_EQ(kc::driver_error_string(empty, CUDA_ERROR_OUT_OF_MEMORY), "CUresult 2");
}

TEST(CudaDriverTable, RealDriverUnavailableGivesReasonOrWorks) {
  std::string why;
  const kc::DriverApi* api = kc::try_driver_api(&why);
  if (api == nullptr) {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(kc::driver_api(), kilnrt::Error);
    try {
      kc::driver_api();
    } catch (const kilnrt::Error& e) {
      EXPECT_EQ(e.code(), kilnrt::ErrorCode::kCuda);
      EXPECT_EQ(e.message(), why);
    }
  } else {
    EXPECT_NE(api->Init, nullptr);
    EXPECT_NE(api->CtxPushCurrent, nullptr);
    EXPECT_NE(api->LaunchKernel, nullptr);
    EXPECT_TRUE(kc::cuda_initialised());
  }
}
