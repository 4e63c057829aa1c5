// NVRTC compilation, the on-disk kernel cache and Kernel launches. The NVRTC part needs no GPU (the target arch is
// given explicitly); the launch tests skip, with the reason, where no usable GPU exists.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"
#include "cuda/nvrtc_compiler.h"
#include "kilnrt/cuda/kernel.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/error.h"

namespace kc = kilnrt::cuda;

namespace {

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

const char* kTemplated = R"(
template <typename T> __global__ void scale(T* p, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= s;
}
)";

#define SKIP_WITHOUT_NVRTC()                                              \
  do {                                                                    \
    const kc::LibraryInfo& nv_ = kc::library(kc::Library::kNvrtc);        \
    if (!nv_.found) GTEST_SKIP() << "NVRTC missing: " << nv_.why_missing; \
  } while (0)

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    std::string why_;                                                                   \
    if (!kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

// Points KILNRT_CACHE_DIR at a fresh temporary directory for the test and removes it afterwards.
class TempCacheDir {
 public:
  TempCacheDir() {
    char tmpl[] = "/tmp/kilnrt_kcache_XXXXXX";
    const char* d = mkdtemp(tmpl);
    dir_ = d ? d : "/tmp";
    const char* old = getenv("KILNRT_CACHE_DIR");
    had_old_ = old != nullptr;
    if (old) old_ = old;
    setenv("KILNRT_CACHE_DIR", dir_.c_str(), 1);
  }
  ~TempCacheDir() {
    if (had_old_)
      setenv("KILNRT_CACHE_DIR", old_.c_str(), 1);
    else
      unsetenv("KILNRT_CACHE_DIR");
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (dir_.rfind("/tmp/kilnrt_kcache_", 0) == 0) (void)!system(cmd.c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, old_;
  bool had_old_ = false;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

}  // namespace

// ---- no GPU needed -----------------------------------------------------------------------------------------

TEST(CudaKernelTarget, ChoosesCubinWhenSupportedElsePtx) {
  const std::vector<int> archs = {75, 80, 86, 89, 90, 100, 120};
  kc::CompileTarget t = kc::choose_target(90, archs, 13000);
  EXPECT_TRUE(t.cubin);
  EXPECT_EQ(t.name(), "sm_90");
  t = kc::choose_target(121, archs, 13000);  // newer GPU than NVRTC knows: PTX of the newest arch below
  EXPECT_FALSE(t.cubin);
  EXPECT_EQ(t.name(), "compute_120");
  t = kc::choose_target(87, archs, 13000);
  EXPECT_EQ(t.name(), "compute_86");
  t = kc::choose_target(86, {}, 13000);  // unknown list: trust the device arch
  EXPECT_EQ(t.name(), "sm_86");
  try {
    kc::choose_target(70, archs, 13000);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kUnsupported);
    EXPECT_NE(e.message().find("sm_70"), std::string::npos) << e.message();
  }
}

TEST(CudaKernelNvrtc, CompilesPtxAndCubinForExplicitArchWithoutGpu) {
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  kc::KernelCompileOptions opt;
  opt.disk_cache = false;
  auto ptx = kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{80, false}, opt);
  EXPECT_EQ(ptx->kind, kc::CompiledCode::Kind::kPtx);
  EXPECT_EQ(ptx->target_name(), "compute_80");
  EXPECT_NE(ptx->image.find(".entry saxpy"), std::string::npos) << ptx->image.substr(0, 400);
  EXPECT_EQ(ptx->lowered_name("saxpy"), "saxpy");
  EXPECT_GT(ptx->nvrtc_version, 0);

  auto cubin = kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{80, true}, opt);
  EXPECT_EQ(cubin->kind, kc::CompiledCode::Kind::kCubin);
  ASSERT_GE(cubin->image.size(), 4u);
  EXPECT_EQ(cubin->image.substr(0, 4), std::string("\x7f"
                                                   "ELF"));
}

TEST(CudaKernelNvrtc, TemplateNameExpressionIsLowered) {
  SKIP_WITHOUT_NVRTC();
  kc::KernelCompileOptions opt;
  opt.disk_cache = false;
  auto code = kc::compile_cuda(kTemplated, {"scale<float>", "scale<int>"}, kc::CompileTarget{80, false}, opt);
  ASSERT_EQ(code->lowered_names.size(), 2u);
  EXPECT_EQ(code->lowered_name("scale<float>").rfind("_Z", 0), 0u) << code->lowered_name("scale<float>");
  EXPECT_NE(code->lowered_name("scale<float>"), code->lowered_name("scale<int>"));
  EXPECT_THROW(code->lowered_name("scale<double>"), kilnrt::Error);
}

TEST(CudaKernelNvrtc, CompileErrorCarriesLogAndKernelName) {
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  const std::string bad = R"(
extern "C" __global__ void broken_kernel(float* y) { y[0] = undefined_identifier_xyz; }
)";
  const long writes = kc::nvrtc_stats().disk_writes;
  try {
    kc::compile_cuda(bad, {"broken_kernel"}, kc::CompileTarget{80, false});
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_EQ(e.code(), kilnrt::ErrorCode::kCuda);
    EXPECT_NE(e.message().find("broken_kernel"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("undefined_identifier_xyz"), std::string::npos) << e.message();  // NVRTC's log
    EXPECT_NE(e.message().find("compute_80"), std::string::npos) << e.message();
    EXPECT_NE(e.where().find("broken_kernel"), std::string::npos) << e.where();
    EXPECT_FALSE(e.file().empty());
  }
  EXPECT_EQ(kc::nvrtc_stats().disk_writes, writes);  // nothing cached for a failure
}

TEST(CudaKernelNvrtc, SecondCompileIsADiskCacheHit) {
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  EXPECT_EQ(kc::kernel_cache_dir(), cache.dir() + "/kernels");
  const kc::NvrtcStats s0 = kc::nvrtc_stats();
  auto a = kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{80, false});
  const kc::NvrtcStats s1 = kc::nvrtc_stats();
  EXPECT_EQ(s1.compilations, s0.compilations + 1);
  EXPECT_EQ(s1.disk_writes, s0.disk_writes + 1);
  EXPECT_FALSE(a->from_disk_cache);
  auto b = kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{80, false});
  const kc::NvrtcStats s2 = kc::nvrtc_stats();
  EXPECT_EQ(s2.compilations, s1.compilations) << "second compile must come from the disk cache";
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  EXPECT_TRUE(b->from_disk_cache);
  EXPECT_EQ(a->image, b->image);
  EXPECT_EQ(b->lowered_name("saxpy"), "saxpy");
  // Another option or target is another key.
  kc::KernelCompileOptions opt;
  opt.nvrtc_options = {"--use_fast_math"};
  kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{80, false}, opt);
  kc::compile_cuda(kSaxpy, {"saxpy"}, kc::CompileTarget{86, false});
  EXPECT_EQ(kc::nvrtc_stats().compilations, s2.compilations + 2);
  // No temporary files are left behind.
  std::string listing = cache.dir() + "/kernels";
  EXPECT_EQ(system(("ls '" + listing + "' | grep -q tmp").c_str()) == 0, false);
}

TEST(CudaKernelNvrtc, DamagedCacheFileIsIgnoredAndRebuilt) {
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  const kc::CompileTarget target{80, false};
  auto first = kc::compile_cuda(kSaxpy, {"saxpy"}, target);
  const std::string key = kc::compile_key_material(kSaxpy, {"saxpy"}, {}, target, kc::nvrtc_api().version);
  const std::string path = kc::kernel_cache_path(key);
  std::string good = slurp(path);
  ASSERT_FALSE(good.empty()) << path;

  struct Damage {
    const char* what;
    std::string bytes;
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x5A;
  std::vector<Damage> damages = {{"flipped byte", flipped},
                                 {"truncated", good.substr(0, good.size() / 3)},
                                 {"empty", ""},
                                 {"garbage", std::string(1000, 'x')}};
  for (const auto& d : damages) {
    spit(path, d.bytes);
    const kc::NvrtcStats before = kc::nvrtc_stats();
    auto code = kc::compile_cuda(kSaxpy, {"saxpy"}, target);
    const kc::NvrtcStats after = kc::nvrtc_stats();
    EXPECT_EQ(after.compilations, before.compilations + 1) << d.what;
    EXPECT_FALSE(code->from_disk_cache) << d.what;
    EXPECT_EQ(code->image, first->image) << d.what;
    kc::CompiledCode check;
    EXPECT_TRUE(kc::decode_kernel_cache_file(slurp(path), key, &check)) << d.what << ": file not rebuilt";
  }
  // A valid file of another key (hash collision, or a copied file) is not used.
  kc::CompiledCode other;
  EXPECT_FALSE(kc::decode_kernel_cache_file(good, key + "x", &other));
  EXPECT_TRUE(kc::decode_kernel_cache_file(good, key, &other));
}

// ---- on the GPU --------------------------------------------------------------------------------------------

TEST(CudaKernel, SaxpyCompilesLaunchesAndComputes) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  const kc::DriverApi& api = kc::driver_api();
  CUcontext before = nullptr;
  ASSERT_EQ(api.CtxGetCurrent(&before), CUDA_SUCCESS);

  kc::Kernel k = kc::Kernel::compile(0, kSaxpy, "saxpy");
  ASSERT_TRUE(k);
  EXPECT_EQ(k.code()->arch > 0, true);
  const int n = 100000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97);
    y[i] = static_cast<float>(i % 13) - 6.f;
  }
  kc::Stream stream(0);
  kc::DeviceBuffer dx(0, n * sizeof(float)), dy(0, n * sizeof(float));
  dx.copy_from_host_async(x.data(), n * sizeof(float), stream.get());
  dy.copy_from_host_async(y.data(), n * sizeof(float), stream.get());
  const float a = 2.5f;
  k.launch(kc::Dim3((n + 255) / 256), kc::Dim3(256), 0, stream.get(), a, static_cast<const float*>(dx.data()),
           static_cast<float*>(dy.data()), n);
  std::vector<float> out(n);
  dy.copy_to_host_async(out.data(), n * sizeof(float), stream.get());
  stream.synchronize();
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], a * x[i] + y[i]) << "element " << i;

  CUcontext after = nullptr;
  ASSERT_EQ(api.CtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(before, after) << "the caller's current context changed";

  // Same code on the same device: the loaded module is shared, nothing is recompiled.
  const long compiles = kc::nvrtc_stats().compilations;
  kc::Kernel k2 = kc::Kernel::compile(0, kSaxpy, "saxpy");
  EXPECT_EQ(k2.function(), k.function());
  EXPECT_EQ(kc::nvrtc_stats().compilations, compiles);

  // Code kept (e.g. in an engine file) loads without NVRTC.
  kc::Kernel k3 = kc::Kernel::load(0, k.code(), "saxpy");
  ASSERT_TRUE(k3);
  k3.launch(kc::Dim3((n + 255) / 256), kc::Dim3(256), 0, stream.get(), 1.0f, static_cast<const float*>(dx.data()),
            static_cast<float*>(dy.data()), n);
  dy.copy_to_host_async(out.data(), n * sizeof(float), stream.get());
  stream.synchronize();
  for (int i = 0; i < n; i += 997) ASSERT_FLOAT_EQ(out[i], a * x[i] + y[i] + x[i]) << "element " << i;
}

TEST(CudaKernel, TemplatedKernelAndBadLaunchAreReported) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NVRTC();
  TempCacheDir cache;
  kc::Kernel k = kc::Kernel::compile(0, kTemplated, "scale<float>");
  kc::Stream stream(0);
  std::vector<float> h(1000, 3.f);
  kc::DeviceBuffer d(0, h.size() * sizeof(float));
  d.copy_from_host_async(h.data(), h.size() * sizeof(float), stream.get());
  k.launch(kc::Dim3(4), kc::Dim3(256), 0, stream.get(), static_cast<float*>(d.data()), 2.f, 1000);
  d.copy_to_host_async(h.data(), h.size() * sizeof(float), stream.get());
  stream.synchronize();
  EXPECT_EQ(h[0], 6.f);
  EXPECT_EQ(h[999], 6.f);
  // 4096 threads per block is beyond every GPU's limit: a clear error naming the kernel, not a silent no-op.
  try {
    k.launch(kc::Dim3(1), kc::Dim3(4096), 0, stream.get(), static_cast<float*>(d.data()), 2.f, 1000);
    FAIL() << "expected kilnrt::Error";
  } catch (const kilnrt::Error& e) {
    EXPECT_NE(e.where().find("scale<float>"), std::string::npos) << e.where();
  }
  stream.synchronize();
}
