// A temporary directory of its own for every test process. ctest runs each test in a process of its own, several at
// a time (scripts/test.sh: ctest -j), and many tests write fixed file names under testing::TempDir(): two processes
// could race on one file (CI once read a model another process was rewriting: "ONNX ir_version 0"). Before main,
// TEST_TMPDIR — which testing::TempDir() reads — is pointed at a fresh directory named after the process id (unless
// the caller set TEST_TMPDIR), and the directory is removed when that process exits (not when a forked child does).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

class PerProcessTempDir {
 public:
  PerProcessTempDir() {
    const char* set = std::getenv("TEST_TMPDIR");
    if (set && *set) return;
    std::error_code ec;
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path(ec) / ("kilnrt_test_" + std::to_string(::getpid()));
    if (ec || !std::filesystem::create_directories(dir, ec) || ec) return;  // keep gtest's default
    dir_ = dir.string();
    owner_ = ::getpid();
    ::setenv("TEST_TMPDIR", dir_.c_str(), 1);
  }
  ~PerProcessTempDir() {
    std::error_code ec;
    if (!dir_.empty() && ::getpid() == owner_) std::filesystem::remove_all(dir_, ec);  // not in a forked child
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  pid_t owner_ = 0;
};

const PerProcessTempDir g_temp_dir;

TEST(TestTempDir, EachTestProcessWritesInADirectoryOfItsOwn) {
  if (g_temp_dir.dir().empty()) GTEST_SKIP() << "TEST_TMPDIR was set by the caller: " << std::getenv("TEST_TMPDIR");
  const std::string tmp = testing::TempDir();
  EXPECT_NE(tmp.find("kilnrt_test_" + std::to_string(::getpid())), std::string::npos) << tmp;
  EXPECT_TRUE(std::filesystem::is_directory(tmp)) << tmp;
}

}  // namespace
