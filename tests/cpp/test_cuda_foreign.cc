// Foreign-resource checks (docs/architecture.md, invariant 2) and the handle pools. The decision logic runs against a
// fake driver table (no GPU needed); the GPU tests check real torch-like, pycuda-like and cudaMallocAsync memory and
// streams, and skip, with the reason, where no usable GPU exists.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/foreign_checks.h"
#include "cuda/handle_pool.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/error.h"

namespace kc = kilnrt::cuda;

namespace {

// ---- the fake driver ---------------------------------------------------------------------------------------
constexpr int kFakeDevices = 2;
char g_primary_storage[kFakeDevices];
char g_user_storage;
char g_stream_storage[8];
CUcontext primary_of(int d) { return reinterpret_cast<CUcontext>(&g_primary_storage[d]); }
CUcontext user_ctx() { return reinterpret_cast<CUcontext>(&g_user_storage); }
CUstream fake_stream(int i) { return reinterpret_cast<CUstream>(&g_stream_storage[i]); }

struct FakePointer {
  CUcontext ctx;
  unsigned type;
  int ordinal;
  bool managed;
};
struct FakeState {
  std::map<CUdeviceptr, FakePointer> pointers;
  std::map<CUstream, CUcontext> streams;
  bool primary_active[kFakeDevices] = {true, false};
  std::vector<CUcontext> created_in;
};
FakeState g;
thread_local std::vector<CUcontext> t_stack;
CUcontext current() { return t_stack.empty() ? nullptr : t_stack.back(); }

CUresult fGetErrorName(CUresult, const char** s) {
  *s = "CUDA_ERROR_FAKE";
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
  *c = primary_of(d);
  g.primary_active[d] = true;
  return CUDA_SUCCESS;
}
CUresult fPrimaryGetState(CUdevice d, unsigned* flags, int* active) {
  *flags = 0;
  *active = g.primary_active[d] ? 1 : 0;
  return CUDA_SUCCESS;
}
CUresult fCtxGetCurrent(CUcontext* c) {
  *c = current();
  return CUDA_SUCCESS;
}
CUresult fCtxPush(CUcontext c) {
  t_stack.push_back(c);
  return CUDA_SUCCESS;
}
CUresult fCtxPop(CUcontext* c) {
  if (t_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c) *c = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult fPointerGetAttributes(unsigned n, CUpointer_attribute* attrs, void** data, CUdeviceptr p) {
  if (!current()) return CUDA_ERROR_INVALID_CONTEXT;
  FakePointer fp{nullptr, 0, -2, false};  // unknown address: NULL / 0 attributes, as the real driver reports
  auto it = g.pointers.find(p);
  if (it != g.pointers.end()) fp = it->second;
  for (unsigned i = 0; i < n; ++i) {
    switch (attrs[i]) {
      case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data[i]) = fp.ctx; break;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data[i]) = fp.type; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[i]) = fp.ordinal; break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<bool*>(data[i]) = fp.managed; break;
      case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *static_cast<bool*>(data[i]) = false; break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data[i]) = 0; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data[i]) = 0; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}
CUresult fStreamGetCtx(CUstream s, CUcontext* c) {
  auto it = g.streams.find(s);
  if (it == g.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  *c = it->second;
  return CUDA_SUCCESS;
}

kc::DriverApi make_fake() {
  kc::DriverApi a;
  a.GetErrorName = fGetErrorName;
  a.GetErrorString = fGetErrorString;
  a.DeviceGetCount = fDeviceGetCount;
  a.DeviceGet = fDeviceGet;
  a.DevicePrimaryCtxRetain = fPrimaryRetain;
  a.DevicePrimaryCtxGetState = fPrimaryGetState;
  a.CtxGetCurrent = fCtxGetCurrent;
  a.CtxPushCurrent = fCtxPush;
  a.CtxPopCurrent = fCtxPop;
  a.PointerGetAttributes = fPointerGetAttributes;
  a.StreamGetCtx = fStreamGetCtx;
  return a;
}
const kc::DriverApi g_fake = make_fake();

// ---- fake cuBLASLt / cuDNN ---------------------------------------------------------------------------------
char g_handle_storage[64];
int g_handles_made = 0, g_handles_destroyed = 0;
std::vector<std::pair<kc::CudnnHandle, kc::StreamHandle>> g_set_stream_calls;
int fLtCreate(kc::CublasLtHandle* h) {
  g.created_in.push_back(current());
  *h = reinterpret_cast<kc::CublasLtHandle>(&g_handle_storage[g_handles_made++ % 64]);
  return 0;
}
int fLtDestroy(kc::CublasLtHandle) {
  ++g_handles_destroyed;
  return 0;
}
int fDnnCreate(kc::CudnnHandle* h) {
  g.created_in.push_back(current());
  *h = reinterpret_cast<kc::CudnnHandle>(&g_handle_storage[g_handles_made++ % 64]);
  return 0;
}
int fDnnDestroy(kc::CudnnHandle) {
  ++g_handles_destroyed;
  return 0;
}
int fDnnSetStream(kc::CudnnHandle h, kc::StreamHandle s) {
  g_set_stream_calls.emplace_back(h, s);
  return 0;
}

class CudaForeignFake : public ::testing::Test {
 protected:
  void SetUp() override {
    g = FakeState();
    t_stack.clear();
    kc::set_driver_api_for_testing(&g_fake);
    kc::reset_primary_contexts_for_testing();
    const CUdeviceptr base = 0x7f0000000000ull;
    dev0_ = reinterpret_cast<void*>(base);
    pool0_ = reinterpret_cast<void*>(base + 0x1000);
    dev1_ = reinterpret_cast<void*>(base + 0x2000);
    user_ = reinterpret_cast<void*>(base + 0x3000);
    pinned_ = reinterpret_cast<void*>(base + 0x4000);
    managed_ = reinterpret_cast<void*>(base + 0x5000);
    g.pointers[base] = {primary_of(0), CU_MEMORYTYPE_DEVICE, 0, false};
    g.pointers[base + 0x1000] = {nullptr, CU_MEMORYTYPE_DEVICE, 0, false};  // cudaMallocAsync pool / VMM
    g.pointers[base + 0x2000] = {primary_of(1), CU_MEMORYTYPE_DEVICE, 1, false};
    g.pointers[base + 0x3000] = {user_ctx(), CU_MEMORYTYPE_DEVICE, 0, false};
    g.pointers[base + 0x4000] = {primary_of(0), CU_MEMORYTYPE_HOST, 0, false};
    g.pointers[base + 0x5000] = {primary_of(0), CU_MEMORYTYPE_DEVICE, 0, true};
    g.streams[fake_stream(0)] = primary_of(0);
    g.streams[fake_stream(1)] = primary_of(1);
    g.streams[fake_stream(2)] = user_ctx();
  }
  void TearDown() override {
    kc::set_handle_library_api_for_testing(nullptr);
    kc::set_driver_api_for_testing(nullptr);
    kc::reset_primary_contexts_for_testing();
    t_stack.clear();
  }
  // Runs `fn`, expects kilnrt::Error(kInvalidArgument) whose message contains every `needle`, and an unchanged stack.
  template <class Fn>
  void expect_rejected(Fn fn, std::vector<std::string> needles) {
    const std::vector<CUcontext> stack = t_stack;
    try {
      fn();
      ADD_FAILURE() << "expected kilnrt::Error";
    } catch (const kilnrt::Error& e) {
      EXPECT_EQ(e.code(), kilnrt::ErrorCode::kInvalidArgument) << e.what();
      for (const auto& n : needles) EXPECT_NE(e.message().find(n), std::string::npos) << n << " | " << e.message();
    }
    EXPECT_EQ(t_stack, stack);
  }
  void *dev0_, *pool0_, *dev1_, *user_, *pinned_, *managed_;
};

}  // namespace

TEST_F(CudaForeignFake, DeviceAndPoolAndManagedPointersAreAccepted) {
  t_stack.push_back(user_ctx());  // whatever the caller has current
  EXPECT_NO_THROW(kc::check_device_pointer(dev0_, 0, "input 'x'"));
  EXPECT_NO_THROW(kc::check_device_pointer(pool0_, 0, "input 'x'"));
  EXPECT_NO_THROW(kc::check_device_pointer(managed_, 0, "input 'x'"));
  EXPECT_EQ(t_stack, std::vector<CUcontext>{user_ctx()});
}

TEST_F(CudaForeignFake, HostAndForeignPointersAreRejectedClearly) {
  int host_array[4] = {0, 0, 0, 0};
  expect_rejected([&] { kc::check_device_pointer(host_array, 0, "input 'images'"); },
                  {"input 'images'", "host memory", "copy it to cuda:0"});
  expect_rejected([&] { kc::check_device_pointer(pinned_, 0, "input 'x'"); }, {"page-locked host memory"});
  expect_rejected([&] { kc::check_device_pointer(dev1_, 0, "output 'y'"); },
                  {"output 'y'", "is on cuda:1", "engine runs on cuda:0"});
  expect_rejected([&] { kc::check_device_pointer(user_, 0, "input 'x'"); },
                  {"not the primary context of cuda:0", "pycuda", "retain_primary_context"});
  expect_rejected([&] { kc::check_device_pointer(nullptr, 0, "input 'x'"); }, {"null device pointer"});
  t_stack.push_back(user_ctx());
  expect_rejected([&] { kc::check_device_pointer(user_, 0, "input 'x'"); }, {"cuCtxCreate"});
}

TEST_F(CudaForeignFake, ValidateIsPureLogic) {
  kc::PointerAttributes a;
  a.memory_type = CU_MEMORYTYPE_DEVICE;
  a.device_ordinal = 0;
  a.context = nullptr;
  EXPECT_NO_THROW(kc::validate_pointer_attributes(dev0_, a, 0, primary_of(0), "t"));
  a.context = primary_of(0);
  EXPECT_NO_THROW(kc::validate_pointer_attributes(dev0_, a, 0, primary_of(0), "t"));
  a.context = user_ctx();
  EXPECT_THROW(kc::validate_pointer_attributes(dev0_, a, 0, primary_of(0), "t"), kilnrt::Error);
  a.context = nullptr;
  a.memory_type = CU_MEMORYTYPE_ARRAY;
  EXPECT_THROW(kc::validate_pointer_attributes(dev0_, a, 0, primary_of(0), "t"), kilnrt::Error);
}

TEST_F(CudaForeignFake, SpecialStreamsResolveAgainstTheCallersContext) {
  kc::ResolvedStream r = kc::resolve_stream(nullptr, 0);  // no context current
  EXPECT_EQ(r.kind, kc::StreamKind::kLegacyDefault);
  EXPECT_EQ(r.handle, nullptr);
  r = kc::resolve_stream(CU_STREAM_PER_THREAD, 0);
  EXPECT_EQ(r.kind, kc::StreamKind::kPerThreadDefault);
  EXPECT_EQ(r.handle, CU_STREAM_PER_THREAD);
  r = kc::resolve_stream(CU_STREAM_LEGACY, 0);
  EXPECT_EQ(r.kind, kc::StreamKind::kLegacyDefault);

  t_stack.push_back(primary_of(0));
  EXPECT_EQ(kc::resolve_stream(nullptr, 0).kind, kc::StreamKind::kLegacyDefault);
  t_stack.back() = kc::primary_context(1);  // torch on another device: the engine's device's default stream
  EXPECT_EQ(kc::resolve_stream(nullptr, 0).kind, kc::StreamKind::kLegacyDefault);
  t_stack.back() = user_ctx();  // pycuda's context current: stream 0 would be *its* default stream
  expect_rejected([] { kc::resolve_stream(nullptr, 0); }, {"handle 0", "user-created", "primary context"});
  expect_rejected([] { kc::resolve_stream(CU_STREAM_PER_THREAD, 0); }, {"per-thread", "user-created"});
}

TEST_F(CudaForeignFake, ExplicitStreamsMustBelongToThePrimaryContext) {
  t_stack.push_back(user_ctx());
  kc::ResolvedStream r = kc::resolve_stream(fake_stream(0), 0);
  EXPECT_EQ(r.kind, kc::StreamKind::kExplicit);
  EXPECT_EQ(r.handle, fake_stream(0));
  kc::primary_context(1);
  expect_rejected([] { kc::resolve_stream(fake_stream(1), 0); },
                  {"stream belongs to another CUDA context", "primary context of device 1", "cuda:0"});
  expect_rejected([] { kc::resolve_stream(fake_stream(2), 0); },
                  {"stream belongs to another CUDA context", "user-created", "torch.cuda.Stream"});
  expect_rejected([] { kc::resolve_stream(fake_stream(5), 0); }, {"not a valid CUDA stream"});
  EXPECT_EQ(t_stack, std::vector<CUcontext>{user_ctx()});
}

TEST_F(CudaForeignFake, ForeignDeviceOfInactivePrimaryIsNotRetained) {
  // Device 1's primary context is not active: describing a foreign stream must not create it.
  expect_rejected([] { kc::resolve_stream(fake_stream(2), 0); }, {"user-created"});
  EXPECT_FALSE(g.primary_active[1]);
}

TEST_F(CudaForeignFake, HandlePoolReusesHandlesCreatedInThePrimaryContext) {
  kc::HandleLibraryApi libs;
  libs.cublasLtCreate = fLtCreate;
  libs.cublasLtDestroy = fLtDestroy;
  libs.cudnnCreate = fDnnCreate;
  libs.cudnnDestroy = fDnnDestroy;
  libs.cudnnSetStream = fDnnSetStream;
  kc::set_handle_library_api_for_testing(&libs);
  t_stack.push_back(user_ctx());
  kc::HandlePool& pool = kc::HandlePool::for_device(0);
  const size_t made_lt = pool.created_cublaslt(), made_dnn = pool.created_cudnn();
  kc::CublasLtHandle first = nullptr;
  {
    kc::CublasLtLease a = pool.acquire_cublaslt();
    kc::CublasLtLease b = pool.acquire_cublaslt();
    ASSERT_TRUE(a && b);
    EXPECT_NE(a.get(), b.get());
    first = a.get();
    EXPECT_EQ(pool.idle_cublaslt(), 0u);
  }
  EXPECT_EQ(pool.idle_cublaslt(), 2u);
  {
    kc::CublasLtLease c = pool.acquire_cublaslt();
    EXPECT_TRUE(c.get() == first || pool.idle_cublaslt() == 1u);
    kc::CublasLtLease moved = std::move(c);
    EXPECT_FALSE(c);
    EXPECT_TRUE(moved);
  }
  EXPECT_EQ(pool.created_cublaslt(), made_lt + 2);
  {
    kc::CudnnLease d = pool.acquire_cudnn(fake_stream(0));
    ASSERT_TRUE(d);
    ASSERT_FALSE(g_set_stream_calls.empty());
    EXPECT_EQ(g_set_stream_calls.back().first, d.get());
    EXPECT_EQ(g_set_stream_calls.back().second, fake_stream(0));
  }
  EXPECT_EQ(pool.created_cudnn(), made_dnn + 1);
  EXPECT_EQ(pool.idle_cudnn(), 1u);
  for (CUcontext c : g.created_in) EXPECT_EQ(c, primary_of(0)) << "handles must be created under the guard";
  EXPECT_EQ(t_stack, std::vector<CUcontext>{user_ctx()});
  const int destroyed = g_handles_destroyed;
  pool.trim();
  EXPECT_EQ(g_handles_destroyed, destroyed + 3);
  EXPECT_EQ(pool.idle_cublaslt() + pool.idle_cudnn(), 0u);
}

TEST_F(CudaForeignFake, MissingLibraryIsNamedInTheError) {
  kc::HandleLibraryApi libs;
  libs.cudnn_missing = "cuDNN not found (tried libcudnn.so.9): install cuDNN 9: `pip install nvidia-cudnn-cu13`";
  libs.cublaslt_missing = "cuBLASLt not found (tried libcublasLt.so.13)";
  kc::set_handle_library_api_for_testing(&libs);
  t_stack.push_back(user_ctx());
  try {
    kc::HandlePool::for_device(0).acquire_cudnn(nullptr);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kUnsupported);
    EXPECT_NE(e.message().find("cuDNN is not available"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("pip install nvidia-cudnn"), std::string::npos) << e.message();
  }
  try {
    kc::HandlePool::for_device(0).acquire_cublaslt();
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kUnsupported);
    EXPECT_NE(e.message().find("cuBLASLt"), std::string::npos) << e.message();
  }
  EXPECT_EQ(t_stack, std::vector<CUcontext>{user_ctx()});
}

// ---- on the GPU --------------------------------------------------------------------------------------------
namespace {

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    std::string why_;                                                                   \
    if (!kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

using CtxCreateFn = CUresult (*)(CUcontext*, unsigned, CUdevice);
using CtxCreateV4Fn = CUresult (*)(CUcontext*, void*, unsigned, CUdevice);
using CtxDestroyFn = CUresult (*)(CUcontext);

// A context made with cuCtxCreate, as pycuda.autoinit does (test-only: kilnrt never creates contexts). It is current
// while it lives.
struct UserContext {
  CUcontext ctx = nullptr;
  CtxDestroyFn destroy = nullptr;
  std::string why;
  UserContext() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
      why = "libcuda.so.1 is not loaded";
      return;
    }
    auto create = reinterpret_cast<CtxCreateFn>(dlsym(lib, "cuCtxCreate_v2"));
    auto create4 = reinterpret_cast<CtxCreateV4Fn>(dlsym(lib, "cuCtxCreate_v4"));
    destroy = reinterpret_cast<CtxDestroyFn>(dlsym(lib, "cuCtxDestroy_v2"));
    if ((!create && !create4) || !destroy) {
      why = "cuCtxCreate_v2/_v4 or cuCtxDestroy_v2 not exported";
      return;
    }
    CUdevice dev = 0;
    kc::driver_api().DeviceGet(&dev, 0);
    CUresult r = create ? create(&ctx, 0, dev) : create4(&ctx, nullptr, 0, dev);
    if (r != CUDA_SUCCESS) {
      why = "cuCtxCreate failed: " + kc::driver_error_string(kc::driver_api(), r);
      ctx = nullptr;
    }
  }
  ~UserContext() {
    if (ctx && destroy) destroy(ctx);  // also pops it
  }
};

CUcontext current_ctx() {
  CUcontext c = nullptr;
  EXPECT_EQ(kc::driver_api().CtxGetCurrent(&c), CUDA_SUCCESS);
  return c;
}

}  // namespace

TEST(CudaForeign, RealPointersAreCheckedByKindContextAndDevice) {
  SKIP_WITHOUT_GPU();
  CUcontext before = current_ctx();
  kc::DeviceBuffer d(0, 4096);
  EXPECT_NO_THROW(kc::check_device_pointer(d.data(), 0, "input 'x'"));
  EXPECT_NO_THROW(kc::check_device_pointer(static_cast<char*>(d.data()) + 100, 0, "input 'x'"));
  std::vector<float> host(1024);
  try {
    kc::check_device_pointer(host.data(), 0, "input 'x'");
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_NE(e.message().find("host memory"), std::string::npos) << e.message();
  }
  kc::PinnedBuffer pinned(0, 4096);
  EXPECT_THROW(kc::check_device_pointer(pinned.data(), 0, "input 'x'"), kilnrt::Error);
  if (kc::device_count() > 1) {
    kc::DeviceBuffer d1(1, 4096);
    EXPECT_THROW(kc::check_device_pointer(d1.data(), 0, "input 'x'"), kilnrt::Error);
  }
  EXPECT_EQ(current_ctx(), before);
}

TEST(CudaForeign, MallocAsyncPoolPointerIsAccepted) {
  SKIP_WITHOUT_GPU();
  kc::Stream stream(0);
  CUdeviceptr p = 0;
  {
    kc::ContextGuard guard(0);
    CUresult r = guard.api().MemAllocAsync(&p, 1 << 20, stream.get());
    if (r == CUDA_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "stream-ordered allocation not supported on this GPU";
    ASSERT_EQ(r, CUDA_SUCCESS);
    ASSERT_EQ(guard.api().StreamSynchronize(stream.get()), CUDA_SUCCESS);
  }
  kc::PointerAttributes a = kc::query_pointer_attributes(reinterpret_cast<void*>(p), 0);
  RecordProperty("pool_pointer_context_is_null", a.context == nullptr ? "yes" : "no");
  EXPECT_NO_THROW(kc::check_device_pointer(reinterpret_cast<void*>(p), 0, "input 'x'"));
  kc::ContextGuard guard(0);
  EXPECT_EQ(guard.api().MemFreeAsync(p, stream.get()), CUDA_SUCCESS);
  EXPECT_EQ(guard.api().StreamSynchronize(stream.get()), CUDA_SUCCESS);
}

TEST(CudaForeign, UserContextPointerAndStreamAreRejected) {
  SKIP_WITHOUT_GPU();
  kc::primary_context(0);
  UserContext user;
  if (!user.ctx) GTEST_SKIP() << "cannot create a user context: " << user.why;
  const kc::DriverApi& api = kc::driver_api();
  ASSERT_EQ(current_ctx(), user.ctx);
  CUdeviceptr p = 0;
  ASSERT_EQ(api.MemAlloc(&p, 4096), CUDA_SUCCESS);  // allocated in the user context (current)
  CUstream s = nullptr;
  ASSERT_EQ(api.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  try {
    kc::check_device_pointer(reinterpret_cast<void*>(p), 0, "input 'x'");
    ADD_FAILURE() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_NE(e.message().find("not the primary context"), std::string::npos) << e.message();
  }
  try {
    kc::resolve_stream(s, 0);
    ADD_FAILURE() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_NE(e.message().find("stream belongs to another CUDA context"), std::string::npos) << e.message();
  }
  try {
    kc::resolve_stream(nullptr, 0);  // stream 0 with the user context current
    ADD_FAILURE() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_NE(e.message().find("user-created"), std::string::npos) << e.message();
  }
  EXPECT_EQ(current_ctx(), user.ctx) << "the caller's context must stay current";
  // A primary-context stream is fine whatever is current.
  kc::Stream mine(0);
  EXPECT_EQ(kc::resolve_stream(mine.get(), 0).kind, kc::StreamKind::kExplicit);
  EXPECT_EQ(current_ctx(), user.ctx);
  EXPECT_EQ(api.StreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(api.MemFree(p), CUDA_SUCCESS);
}

TEST(CudaForeign, HandlePoolCreatesRealHandlesAndLeavesContext) {
  SKIP_WITHOUT_GPU();
  const kc::HandleLibraryApi& libs = kc::handle_library_api();
  CUcontext before = current_ctx();
  kc::Stream stream(0);
  kc::HandlePool& pool = kc::HandlePool::for_device(0);
  if (!libs.cublaslt_missing) {
    kc::CublasLtHandle h = nullptr;
    {
      kc::CublasLtLease a = pool.acquire_cublaslt();
      ASSERT_TRUE(a);
      h = a.get();
    }
    kc::CublasLtLease b = pool.acquire_cublaslt();
    EXPECT_EQ(b.get(), h) << "a returned handle is reused";
  }
  if (!libs.cudnn_missing) {
    kc::CudnnLease d = pool.acquire_cudnn(stream.get());
    ASSERT_TRUE(d);
    d.set_stream(nullptr);
  }
  {
    kc::WorkspaceLease w = pool.acquire_workspace(1 << 20);
    EXPECT_GE(w.size(), size_t(1) << 20);
    EXPECT_NO_THROW(kc::check_device_pointer(w.data(), 0, "workspace"));
  }
  kc::WorkspaceLease w2 = pool.acquire_workspace(1 << 19);
  EXPECT_GE(w2.size(), size_t(1) << 19);
  EXPECT_EQ(current_ctx(), before);
}
