// Error text: summary() / detail() / what() (KILNRT_LOG_LEVEL=debug), file errors carrying the operating system's
// reason, and "not an ONNX model" for files that are not ONNX (text, an image, random bytes, a kilnrt engine).
// None of these needs a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "core/check.h"
#include "engine/engine_file.h"
#include "ir/onnx_import.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"
#include "onnx_test_writer.h"

namespace {

using kilnrt::Error;
using kilnrt::ErrorCode;

// Sets an environment variable (unsets it for a null value) for the scope, then restores what was there. (The
// ScopedEnv of cuda_backend_test_util.h is the same, but that header needs the CUDA backend.)
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvVar() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

Error expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no kilnrt::Error thrown";
  return Error(ErrorCode::kInternal, "no error");
}

// A file name of this test process (tests run in parallel processes).
std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "kilnrt_errmsg_" + std::to_string(::getpid()) + "_" + name;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// ---- summary / detail / what ------------------------------------------------------------------------------

TEST(ErrorMessages, SummaryAndDetail) {
  const Error e(ErrorCode::kIo, "cannot open engine file", "model.engine", "fd >= 0",
                "/home/someone/kilnrt/src/engine/file_bytes.cc", 17);
  EXPECT_EQ(e.summary(), "kilnrt I/O error [model.engine]: cannot open engine file");
  EXPECT_EQ(e.detail(), "check 'fd >= 0' failed at src/engine/file_bytes.cc:17");

  const Error no_where(ErrorCode::kInvalidArgument, "bad value", "", "x > 0", "src/engine/builder.cc", 5);
  EXPECT_EQ(no_where.summary(), "kilnrt invalid argument: bad value");
  EXPECT_EQ(no_where.detail(), "check 'x > 0' failed at src/engine/builder.cc:5");

  // A throw without a check: the location alone. Python binding sources keep their python/ folder.
  const Error thrown(ErrorCode::kInternal, "oops", "w", "", "/x/kilnrt/python/src/kilnrt_module.cc", 9);
  EXPECT_EQ(thrown.detail(), "python/src/kilnrt_module.cc:9");
  const Error expression_only(ErrorCode::kInternal, "oops", "w", "a == b");
  EXPECT_EQ(expression_only.detail(), "check 'a == b' failed");
  const Error plain(ErrorCode::kInternal, "oops");
  EXPECT_EQ(plain.detail(), "");
  EXPECT_EQ(plain.summary(), "kilnrt internal error: oops");
}

TEST(ErrorMessages, WhatIsTheSummaryUnlessDebug) {
  {
    EnvVar level("KILNRT_LOG_LEVEL", nullptr);
    const Error e(ErrorCode::kIo, "msg", "f.onnx", "fd >= 0", "/a/src/engine/file_bytes.cc", 17);
    EXPECT_EQ(std::string(e.what()), e.summary());
    EXPECT_FALSE(contains(e.what(), "failed at")) << e.what();
  }
  {
    EnvVar level("KILNRT_LOG_LEVEL", "info");
    const Error e(ErrorCode::kIo, "msg", "f.onnx", "fd >= 0", "/a/src/engine/file_bytes.cc", 17);
    EXPECT_EQ(std::string(e.what()), e.summary());
  }
  {
    EnvVar level("KILNRT_LOG_LEVEL", "debug");
    const Error e(ErrorCode::kIo, "msg", "f.onnx", "fd >= 0", "/a/src/engine/file_bytes.cc", 17);
    EXPECT_EQ(std::string(e.what()),
              "kilnrt I/O error [f.onnx]: msg (check 'fd >= 0' failed at src/engine/file_bytes.cc:17)");
    const Error plain(ErrorCode::kIo, "msg");
    EXPECT_EQ(std::string(plain.what()), plain.summary()) << "nothing appended without a detail";
  }
}

TEST(ErrorMessages, LevelIsReadWhenTheErrorIsMade) {
  Error made_in_debug = [] {
    EnvVar level("KILNRT_LOG_LEVEL", "debug");
    return Error(ErrorCode::kInvalidModel, "m", "w", "x", "/r/src/ir/graph.cc", 3);
  }();
  EnvVar level("KILNRT_LOG_LEVEL", nullptr);
  EXPECT_TRUE(ends_with(made_in_debug.what(), " (check 'x' failed at src/ir/graph.cc:3)")) << made_in_debug.what();
  // with_context keeps the choice and prefixes where().
  const Error with_context = made_in_debug.with_context("node 'n1'");
  EXPECT_EQ(with_context.where(), "node 'n1': w");
  EXPECT_EQ(std::string(with_context.what()), with_context.summary() + " (" + with_context.detail() + ")");
  const Error quiet(ErrorCode::kInvalidModel, "m", "w", "x", "/r/src/ir/graph.cc", 3);
  EXPECT_EQ(std::string(quiet.what()), quiet.summary());
  EXPECT_EQ(std::string(quiet.with_context("c").what()), quiet.with_context("c").summary());
}

TEST(ErrorMessages, CheckMacroFillsTheDetail) {
  EnvVar level("KILNRT_LOG_LEVEL", nullptr);
  int line = 0;
  try {
    line = __LINE__ + 1;
    KILNRT_CHECK(1 == 2, kInvalidModel, "Conv 'c1'", "bad thing " << 42);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.summary(), "kilnrt invalid model [Conv 'c1']: bad thing 42");
    EXPECT_EQ(std::string(e.what()), e.summary());
    EXPECT_EQ(e.detail().rfind("check '1 == 2' failed at ", 0), 0u) << e.detail();
    EXPECT_TRUE(ends_with(e.detail(), "tests/cpp/test_error_messages.cc:" + std::to_string(line))) << e.detail();
  }
}

// ---- file errors carry the OS's reason ---------------------------------------------------------------------

TEST(ErrorMessages, MissingModelFileSaysWhy) {
  const std::string path = temp_path("does_not_exist.onnx");
  const std::string reason = std::strerror(ENOENT);  // "No such file or directory"
  Error e = expect_error([&] { kilnrt::ir::import_onnx_file(path); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_EQ(e.where(), path);
  EXPECT_EQ(e.message(), "cannot open '" + path + "': " + reason);
  // The public build and load say the same.
  e = expect_error([&] { kilnrt::build_engine(path); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_EQ(e.where(), path);
  EXPECT_TRUE(contains(e.message(), reason)) << e.what();
  e = expect_error([&] { kilnrt::Engine::load(temp_path("does_not_exist.engine")); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_TRUE(contains(e.message(), "cannot open '")) << e.what();
  EXPECT_TRUE(contains(e.message(), reason)) << e.what();
}

TEST(ErrorMessages, DirectoryGivenAsModel) {
  std::string dir = ::testing::TempDir();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string reason = std::strerror(EISDIR);  // "Is a directory"
  Error e = expect_error([&] { kilnrt::ir::import_onnx_file(dir); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_EQ(e.where(), dir);
  EXPECT_EQ(e.message(), "cannot read '" + dir + "': " + reason);
  e = expect_error([&] { kilnrt::build_engine(dir); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_EQ(e.message(), "cannot read '" + dir + "': " + reason);
  e = expect_error([&] { kilnrt::Engine::load(dir); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  EXPECT_TRUE(contains(e.message(), reason)) << e.what();
}

// ---- not an ONNX model -------------------------------------------------------------------------------------

void expect_not_onnx(const std::string& path, const std::string& what) {
  for (int via_build = 0; via_build < 2; ++via_build) {
    Error e = expect_error([&] {
      if (via_build)
        kilnrt::build_engine(path);
      else
        kilnrt::ir::import_onnx_file(path);
    });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << what << ": " << e.what();
    EXPECT_EQ(e.where(), path) << what;
    EXPECT_EQ(e.message().rfind("'" + path + "' is not an ONNX model (", 0), 0u) << what << ": " << e.what();
    EXPECT_TRUE(ends_with(e.message(), ")")) << what << ": " << e.what();
    EXPECT_FALSE(contains(e.message(), "byte offset")) << what << ": " << e.what();
    EXPECT_LT(e.message().size(), path.size() + 200) << what << ": the reason stays short: " << e.what();
  }
}

TEST(ErrorMessages, TextFileIsNotOnnx) {
  const std::string path = write_file("notes.onnx", "hello, this is a text file and not a model\n");
  expect_not_onnx(path, "text file");
  const std::string empty = write_file("empty.onnx", "");
  expect_not_onnx(empty, "empty file");
  std::remove(path.c_str());
  std::remove(empty.c_str());
}

TEST(ErrorMessages, ImageIsNotOnnx) {
  // The PNG signature and the start of an IHDR chunk.
  const std::string png(
      "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0\x1f\xf3\xff"
      "a",
      33);
  const std::string path = write_file("picture.onnx", png);
  expect_not_onnx(path, "PNG");
  std::remove(path.c_str());
}

TEST(ErrorMessages, RandomBytesAreNotOnnx) {
  std::mt19937 rng(20240607);
  for (int i = 0; i < 20; ++i) {
    std::string bytes(64 + rng() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    const std::string path = write_file("random" + std::to_string(i) + ".onnx", bytes);
    expect_not_onnx(path, "random bytes #" + std::to_string(i));
    std::remove(path.c_str());
  }
}

TEST(ErrorMessages, EngineFileGivenAsModel) {
  using namespace kilnrt::onnx_test;  // NOLINT
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {1, 4}));
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"y"}});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {1, 4}));
  const std::string model = write_file("relu.onnx", m.serialize());
  const std::string engine = temp_path("relu.engine");
  kilnrt::build_engine_file(model, engine);
  {
    std::ifstream f(engine, std::ios::binary);
    char magic[8] = {};
    f.read(magic, 8);
    ASSERT_EQ(std::memcmp(magic, kilnrt::engine::kEngineMagic, 8), 0) << "the built file starts with the magic";
  }
  for (int via_build = 0; via_build < 2; ++via_build) {
    Error e = expect_error([&] {
      if (via_build)
        kilnrt::build_engine(engine);
      else
        kilnrt::ir::import_onnx_file(engine);
    });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
    EXPECT_EQ(e.where(), engine);
    EXPECT_EQ(e.message().rfind("'" + engine + "' is not an ONNX model (", 0), 0u) << e.what();
    EXPECT_TRUE(contains(e.message(), "kilnrt engine")) << e.what();
    EXPECT_TRUE(contains(e.message(), "kilnrt run")) << e.what();
    EXPECT_TRUE(contains(e.message(), "kilnrt.Engine")) << e.what();
  }
  std::remove(model.c_str());
  std::remove(engine.c_str());
}

TEST(ErrorMessages, DamagedOnnxKeepsItsFieldPath) {
  // A real model whose graph is damaged is an ONNX model: the error names the field, not "not an ONNX model".
  using namespace kilnrt::onnx_test;  // NOLINT
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {1, 4}));
  m.graph.nodes.push_back(
      NodeSpec{"Relu", {"x"}, {"y"}, {AttrSpec::Tensor("t", TensorSpec::float_raw("", {3}, {1.f}))}});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {1, 4}));
  const std::string bytes = m.serialize();
  Error e = expect_error([&] { kilnrt::ir::import_onnx_bytes(bytes.data(), bytes.size(), "", "damaged.onnx"); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
  EXPECT_FALSE(contains(e.message(), "not an ONNX model")) << e.what();
  EXPECT_TRUE(contains(e.where(), "graph.node[0]")) << e.what();
}

}  // namespace
