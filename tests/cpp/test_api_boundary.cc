// The public API's exception boundary (src/engine/api_boundary.h): a standard exception escaping an entry point
// becomes a kilnrt::Error naming the entry point (kInternal; std::bad_alloc: kOutOfMemory), kilnrt::Errors pass
// unchanged, the fuzzers' switch keeps raw exceptions raw, and the contexts Engine::create_context hands out
// translate what escapes each call (a stand-in context throws std::out_of_range / std::length_error / std::bad_alloc).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/api_boundary.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"
#include "onnx_test_writer.h"

namespace kilnrt {
namespace {

using engine::translate_exceptions;

// Runs f and returns the kilnrt::Error it throws (a test failure when it throws nothing or something else).
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a raw exception escaped: " << e.what();
    return Error(ErrorCode::kInvalidArgument, "raw");
  }
  ADD_FAILURE() << "nothing was thrown";
  return Error(ErrorCode::kInvalidArgument, "none");
}

TEST(ApiBoundary, StandardExceptionsBecomeInternalErrorsNamingTheEntryPoint) {
  const Error e =
      error_of([] { translate_exceptions("build_engine", []() -> int { throw std::out_of_range("map::at"); }); });
  EXPECT_EQ(e.code(), ErrorCode::kInternal);
  EXPECT_EQ(e.where(), "build_engine");
  EXPECT_NE(e.message().find("std::out_of_range"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("map::at"), std::string::npos) << e.what();

  const Error oom = error_of([] { translate_exceptions("Engine::load", [] { throw std::bad_alloc(); }); });
  EXPECT_EQ(oom.code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(oom.where(), "Engine::load");

  const Error logic =
      error_of([] { translate_exceptions("Engine::from_bytes", [] { throw std::length_error("vector"); }); });
  EXPECT_EQ(logic.code(), ErrorCode::kInternal);
  EXPECT_NE(logic.message().find("std::length_error"), std::string::npos) << logic.what();
}

TEST(ApiBoundary, KilnrtErrorsAndResultsPassUnchanged) {
  const Error e = error_of([] {
    translate_exceptions("build_engine", [] { throw Error(ErrorCode::kInvalidModel, "bad node", "node 'n1'"); });
  });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_EQ(e.where(), "node 'n1'");
  EXPECT_EQ(e.message(), "bad node");
  EXPECT_EQ(translate_exceptions("run", [] { return std::vector<int>{1, 2, 3}; }), (std::vector<int>{1, 2, 3}));
  // Non-standard exceptions are not ours to translate.
  EXPECT_THROW(translate_exceptions("run", [] { throw 42; }), int);
}

TEST(ApiBoundary, FuzzerSwitchKeepsRawExceptionsRaw) {
  ASSERT_TRUE(engine::exception_translation());  // the default
  engine::set_exception_translation(false);
  EXPECT_THROW(translate_exceptions("build_engine", [] { throw std::out_of_range("raw"); }), std::out_of_range);
  EXPECT_THROW(translate_exceptions("Engine::load", [] { throw std::bad_alloc(); }), std::bad_alloc);
  engine::set_exception_translation(true);
  EXPECT_THROW(translate_exceptions("build_engine", [] { throw std::out_of_range("raw"); }), Error);
}

// A context whose calls throw what a kilnrt bug would; the getters return fixed values to check the forwarding.
class ThrowingContext final : public ExecutionContext {
 public:
  void set_input_shape(const std::string&, const Shape&) override { throw std::invalid_argument("stoll"); }
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>&) override {
    throw std::out_of_range("vector::_M_range_check");
  }
  void enqueue(const std::map<std::string, DeviceTensor>&, const std::map<std::string, DeviceTensor>&, void*) override {
    throw std::length_error("basic_string::_M_create");
  }
  std::map<std::string, Shape> output_shapes(const std::map<std::string, Shape>&) override { throw std::bad_alloc(); }
  void set_activation_memory(void*, size_t) override {
    throw Error(ErrorCode::kInvalidArgument, "too small", "activation memory");
  }
  std::string last_execution_mode() const override { return "graph-replay"; }
  bool profiling() const override { return true; }
  size_t device_memory_bytes() const override { return 1234; }
};

TEST(ApiBoundary, ContextCallsTranslateWhatEscapes) {
  std::unique_ptr<ExecutionContext> ctx = engine::with_exception_translation(std::make_unique<ThrowingContext>());
  EXPECT_TRUE(engine::translates_exceptions(*ctx));
  const Error run = error_of([&] { ctx->run({}); });
  EXPECT_EQ(run.code(), ErrorCode::kInternal);
  EXPECT_EQ(run.where(), "ExecutionContext::run");
  EXPECT_NE(run.message().find("vector::_M_range_check"), std::string::npos) << run.what();
  const Error enq = error_of([&] { ctx->enqueue({}, {}, nullptr); });
  EXPECT_EQ(enq.code(), ErrorCode::kInternal);
  EXPECT_EQ(enq.where(), "ExecutionContext::enqueue");
  const Error shapes = error_of([&] { ctx->output_shapes({}); });
  EXPECT_EQ(shapes.code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(shapes.where(), "ExecutionContext::output_shapes");
  const Error set = error_of([&] { ctx->set_input_shape("x", {1}); });
  EXPECT_EQ(set.where(), "ExecutionContext::set_input_shape");
  const Error mem = error_of([&] { ctx->set_activation_memory(nullptr, 0); });  // a kilnrt::Error: unchanged
  EXPECT_EQ(mem.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(mem.where(), "activation memory");
  EXPECT_EQ(ctx->last_execution_mode(), "graph-replay");
  EXPECT_TRUE(ctx->profiling());
  EXPECT_EQ(ctx->device_memory_bytes(), 1234u);
}

// Through the public API: contexts of a real engine translate, run through the boundary, and a kilnrt::Error of
// build_engine (a missing file) keeps its code and where().
TEST(ApiBoundary, PublicEntryPointsUseTheBoundary) {
  using namespace onnx_test;
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {2, 3}));
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"y"}});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {2, 3}));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kilnrt_api_boundary_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "relu.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    const std::string bytes = m.serialize();
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::vector<uint8_t> bytes = build_engine(path);
  auto eng = Engine::from_bytes(bytes.data(), bytes.size());
  auto ctx = eng->create_context();
  EXPECT_TRUE(engine::translates_exceptions(*ctx));
  Tensor x = Tensor::from_vector(std::vector<float>{-1, 2, -3, 4, -5, 6}, DType::kFloat32, {2, 3});
  const auto out = ctx->run({{"x", x}});
  ASSERT_EQ(out.count("y"), 1u);
  EXPECT_EQ(out.at("y").data<float>()[0], 0.f);
  EXPECT_EQ(out.at("y").data<float>()[1], 2.f);
  const Error missing = error_of([&] { build_engine((dir / "missing.onnx").string()); });
  EXPECT_EQ(missing.code(), ErrorCode::kIo);
  EXPECT_NE(missing.where().find("missing.onnx"), std::string::npos) << missing.what();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kilnrt
