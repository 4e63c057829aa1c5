// The lazy library loader: each of cuDNN / cuBLASLt / NVRTC is either found (absolute path, version, where from)
// or missing with a reason that says what to install. Needs no GPU.
#include <gtest/gtest.h>

#include <string>

#include "cuda/library_loader.h"

namespace kc = kilnrt::cuda;

namespace {
const kc::Library kAll[] = {kc::Library::kCudnn, kc::Library::kCublasLt, kc::Library::kNvrtc};
}

TEST(CudaLoader, EachLibraryIsFoundWithPathAndVersionOrExplainsWhyNot) {
  for (kc::Library lib : kAll) {
    const kc::LibraryInfo& info = kc::library(lib);
    EXPECT_EQ(info.name, kc::library_name(lib));
    if (info.found) {
      EXPECT_NE(info.handle, nullptr);
      ASSERT_FALSE(info.path.empty()) << info.name;
      EXPECT_EQ(info.path[0], '/') << info.name << " path " << info.path;
      EXPECT_GT(info.version, 0) << info.name;
      EXPECT_NE(info.version_string, "unknown") << info.name;
      EXPECT_TRUE(info.source == "already loaded in the process" || info.source == "KILNRT_NVIDIA_LIB_DIRS" ||
                  info.source == "pip package" || info.source == "system")
          << info.source;
      EXPECT_TRUE(info.why_missing.empty());
    } else {
      EXPECT_NE(info.why_missing.find("not found"), std::string::npos) << info.why_missing;
      EXPECT_NE(info.why_missing.find("install"), std::string::npos) << info.why_missing;
      EXPECT_EQ(kc::library_symbol(lib, "anything"), nullptr);
    }
    // remembered: the same record every time
    EXPECT_EQ(&kc::library(lib), &info);
  }
}

TEST(CudaLoader, SecondSearchFindsTheCopyAlreadyLoaded) {
  for (kc::Library lib : kAll) {
    const kc::LibraryInfo& first = kc::library(lib);
    if (!first.found) continue;
    kc::LibraryInfo again = kc::load_library_uncached(lib);
    ASSERT_TRUE(again.found) << again.why_missing;
    EXPECT_EQ(again.source, "already loaded in the process");
    EXPECT_EQ(again.path, first.path);
    EXPECT_EQ(again.version, first.version);
  }
}

TEST(CudaLoader, SymbolsResolveOnlyInFoundLibraries) {
  const kc::LibraryInfo& nvrtc = kc::library(kc::Library::kNvrtc);
  if (!nvrtc.found) GTEST_SKIP() << "NVRTC missing here: " << nvrtc.why_missing;
  EXPECT_NE(kc::library_symbol(kc::Library::kNvrtc, "nvrtcCreateProgram"), nullptr);
  EXPECT_EQ(kc::library_symbol(kc::Library::kNvrtc, "kilnrt_no_such_symbol"), nullptr);
  EXPECT_NE(kc::require_library_symbol(kc::Library::kNvrtc, "nvrtcVersion"), nullptr);
  EXPECT_ANY_THROW(kc::require_library_symbol(kc::Library::kNvrtc, "kilnrt_no_such_symbol"));
}
