// Hostile inputs at run time: every malformed call gets a kilnrt::Error (kInvalidArgument) that names the tensor,
// BEFORE anything runs, and the context keeps working afterwards. Covers what test_end_to_end.cc's
// WrongInputsAreClearErrors and the Python / foreign-pointer tests (test_engine_errors.py, test_gpu_interop.py,
// test_cuda_foreign.cc) do not: two inputs of different dtypes, profiles (below min / above max / rank),
// set_input_shape misuse, undefined / null / misaligned host tensors, data-dependent hostile values (Gather indices),
// and on a GPU: enqueue with null / misaligned / host pointers, outputs too small (shape or allocation), wrong
// output dtype / names, (streams of another context: test_cuda_foreign.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#ifdef KILNRT_HAVE_CUDA
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#endif

using namespace kilnrt;

namespace {

// y[batch, 3] = Gather(x[batch, 4], idx[3], axis=1) * 2
std::string gather_model_path() {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.opsets = {{"", 13}};
  GraphSpec& g = m.graph;
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4}));
  g.inputs.push_back(ValueInfoSpec::tensor("idx", kInt64, {3}));
  g.initializers.push_back(TensorSpec::float_raw("two", {}, {2.0f}));
  g.nodes.push_back(NodeSpec{"Gather", {"x", "idx"}, {"g"}, {AttrSpec::Int("axis", 1)}, "gather_node"});
  g.nodes.push_back(NodeSpec{"Mul", {"g", "two"}, {"y"}});
  g.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 3}));
  const std::string path = testing::TempDir() + "kilnrt_hostile_gather.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  return path;
}

std::shared_ptr<Engine> gather_engine(const std::string& device = "cpu") {
  BuildOptions o;
  o.device = device;
  o.profiles = {{parse_shape_spec("x:1x4/2x4/4x4")}};
  const auto bytes = build_engine(gather_model_path(), o);
  return Engine::from_bytes(bytes.data(), bytes.size(), "<hostile>", 0);
}

Tensor floats(const Shape& shape) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
Tensor indices(std::vector<int64_t> v) { return Tensor::from_data(v.data(), DType::kInt64, {int64_t(v.size())}); }

// Expects fn() to throw kInvalidArgument whose where() contains `where` and whose message contains `needle`.
template <typename Fn>
void expect_invalid(Fn fn, const std::string& where, const std::string& needle,
                    ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one at " << where << ": " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.where().find(where), std::string::npos) << "where() = '" << e.where() << "': " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_correct(const std::map<std::string, Tensor>& out, const Tensor& x, const std::vector<int64_t>& idx) {
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.shape(), (Shape{x.shape()[0], 3}));
  for (int64_t b = 0; b < x.shape()[0]; ++b)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(y.data<float>()[b * 3 + j], 2.0f * x.data<float>()[b * 4 + idx[j]]);
}

}  // namespace

TEST(HostileInputs, CpuRunRejectsBadCallsNamingTheTensorAndKeepsWorking) {
  auto engine = gather_engine();
  auto ctx = engine->create_context();
  const Tensor x = floats({2, 4});
  const Tensor idx = indices({3, 0, 1});
  // Input count and names.
  expect_invalid([&] { ctx->run({{"x", x}}); }, "input 'idx'", "missing input 'idx'");
  expect_invalid([&] { ctx->run({}); }, "input '", "missing input");
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", idx}, {"z", x}}); }, "z", "no input named 'z'");
  expect_invalid([&] { ctx->run({{"X", x}, {"idx", idx}}); }, "X", "no input named 'X'");
  // Dtypes: float64 / int32 where float32 / int64 are expected (no silent conversion).
  expect_invalid(
      [&] {
        ctx->run({{"x", Tensor::zeros(DType::kFloat64, {2, 4})}, {"idx", idx}});
      },
      "input 'x'", "expected dtype float32");
  expect_invalid(
      [&] {
        ctx->run({{"x", x}, {"idx", Tensor::zeros(DType::kInt32, {3})}});
      },
      "input 'idx'", "expected dtype int64");
  // Shapes: rank, fixed dims, outside the profile (below min, above max).
  expect_invalid([&] { ctx->run({{"x", floats({2, 4, 1})}, {"idx", idx}}); }, "input 'x'", "expected rank 2");
  expect_invalid([&] { ctx->run({{"x", floats({2, 5})}, {"idx", idx}}); }, "input 'x'", "dimension 1 must be 4");
  expect_invalid(
      [&] {
        ctx->run({{"x", floats({5, 4})}, {"idx", idx}});
      },
      "input 'x'", "outside the engine's profiles");
  expect_invalid(
      [&] {
        ctx->run({{"x", floats({0, 4})}, {"idx", idx}});
      },
      "input 'x'", "outside the engine's profiles");
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", indices({0, 1})}}); }, "input 'idx'", "dimension 0 must be 3");
  // Undefined tensors and null data.
  expect_invalid([&] { ctx->run({{"x", Tensor()}, {"idx", idx}}); }, "input 'x'", "empty/undefined");
  expect_invalid([&] { Tensor::borrow(nullptr, DType::kFloat32, {2, 4}); }, "", "null data pointer");
  // set_input_shape misuse.
  expect_invalid([&] { ctx->set_input_shape("nope", {2, 4}); }, "nope", "no input named");
  expect_invalid([&] { ctx->set_input_shape("x", {9, 4}); }, "input 'x'", "outside the engine's profiles");
  expect_invalid([&] { ctx->set_input_shape("x", {2, -1}); }, "input 'x'", "negative dimension");
  ctx->set_input_shape("x", {3, 4});
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", idx}}); }, "input 'x'", "differs from the one set");
  ctx->set_input_shape("x", {2, 4});
  // After all that, the same context still computes the right thing.
  expect_correct(ctx->run({{"x", x}, {"idx", idx}}), x, {3, 0, 1});
  expect_correct(engine->run({{"x", x}, {"idx", idx}}), x, {3, 0, 1});
}

TEST(HostileInputs, MisalignedHostTensorIsRejectedBeforeRunning) {
  auto engine = gather_engine();
  auto ctx = engine->create_context();
  std::vector<uint8_t> storage(2 * 4 * sizeof(float) + 16);
  void* misaligned = storage.data() + (reinterpret_cast<uintptr_t>(storage.data()) % 4 == 1 ? 2 : 1);
  const Tensor x = Tensor::borrow(misaligned, DType::kFloat32, {2, 4});
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", indices({0, 1, 2})}}); }, "input 'x'", "not aligned");
  const Tensor aligned = floats({2, 4});
  expect_correct(ctx->run({{"x", aligned}, {"idx", indices({0, 1, 2})}}), aligned, {0, 1, 2});
}

TEST(HostileInputs, HostileValuesAreErrorsNamingTheNode) {
  auto engine = gather_engine();
  auto ctx = engine->create_context();
  const Tensor x = floats({2, 4});
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", indices({0, 4, 1})}}); }, "gather_node", "out of range");
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", indices({0, -5, 1})}}); }, "gather_node", "out of range");
  expect_invalid([&] { ctx->run({{"x", x}, {"idx", indices({INT64_MIN, 0, 1})}}); }, "gather_node", "out of range");
  // Negative indices inside the range count from the end, as ONNX says.
  expect_correct(ctx->run({{"x", x}, {"idx", indices({-1, 0, 1})}}), x, {3, 0, 1});
}

// Fuzz findings (onnx_build): a node declaring more outputs than its op produces (Mul with two outputs)
// or fewer than its shape function writes (HannWindow with none) was a kInternal error; it is a malformed model:
// kInvalidModel naming the node, at build or at the first run.
TEST(HostileInputs, NodesWithTheWrongNumberOfOutputsAreInvalidModels) {
  using namespace kilnrt::onnx_test;
  auto expect_invalid_model = [](const NodeSpec& n, const char* needle) {
    ModelSpec m;
    m.opsets = {{"", 17}};
    m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {2}));
    m.graph.initializers.push_back(TensorSpec::int64_typed("four", {}, {4}));
    m.graph.nodes.push_back(n);
    if (n.outputs.empty()) m.graph.nodes.push_back(NodeSpec{"Identity", {"x"}, {"y"}});
    m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {2}));
    const std::string path = testing::TempDir() + "kilnrt_hostile_outputs.onnx";
    std::ofstream(path, std::ios::binary) << m.serialize();
    try {
      BuildOptions o;
      o.device = "cpu";
      const auto bytes = build_engine(path, o);
      auto e = Engine::from_bytes(bytes.data(), bytes.size(), "<hostile>", 0);
      e->create_context()->run({{"x", floats({2})}});
      FAIL() << "expected kInvalidModel for " << n.name;
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::kInvalidModel) << err.what();
      EXPECT_NE(std::string(err.what()).find(n.name), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  expect_invalid_model(NodeSpec{"Mul", {"x", "x"}, {"y", "extra"}, {}, "two_output_mul"}, "extra");
  expect_invalid_model(NodeSpec{"HannWindow", {"four"}, {}, {}, "no_output_window"}, "output");
}

// Fuzz finding (onnx_build, session-3 final run, at 332,457): a Shape node without an input made constant folding
// throw std::out_of_range (not a kilnrt::Error: the process terminated). Input
// tests/fixtures/fuzz/onnx_build/shape_without_input. Now the build either drops the dead node or names it.
TEST(HostileInputs, ShapeWithoutAnInputIsNoCrash) {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  m.opsets = {{"", 17}};
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {2}));
  m.graph.nodes.push_back(NodeSpec{"Shape", {}, {"s"}, {}, "shape_without_input"});
  m.graph.nodes.push_back(NodeSpec{"Identity", {"x"}, {"y"}});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {2}));
  const std::string path = testing::TempDir() + "kilnrt_hostile_shape.onnx";
  std::ofstream(path, std::ios::binary) << m.serialize();
  try {
    BuildOptions o;
    o.device = "cpu";
    const auto bytes = build_engine(path, o);
    auto e = Engine::from_bytes(bytes.data(), bytes.size(), "<hostile>", 0);
    auto out = e->create_context()->run({{"x", floats({2})}});
    EXPECT_EQ(out.at("y").data<float>()[1], 1.0f);
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("shape_without_input"), std::string::npos) << err.what();
  } catch (const std::exception& other) {
    FAIL() << "not a kilnrt::Error: " << other.what();
  }
}

TEST(HostileInputs, CpuEngineRefusesDeviceCalls) {
  auto engine = gather_engine();
  auto ctx = engine->create_context();
  DeviceTensor d{reinterpret_cast<void*>(0x1000), DType::kFloat32, {2, 4}, 0};
  expect_invalid([&] { ctx->enqueue({{"x", d}}, {}, nullptr); }, "enqueue", "runs on the CPU", ErrorCode::kUnsupported);
}

#ifdef KILNRT_HAVE_CUDA
namespace {
#define KILNRT_HOSTILE_SKIP_WITHOUT_GPU()                                                 \
  do {                                                                                    \
    std::string why_;                                                                     \
    if (!::kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)
}  // namespace

TEST(HostileInputsCuda, EnqueueRejectsBadPointersAndBuffersBeforeLaunching) {
  KILNRT_HOSTILE_SKIP_WITHOUT_GPU();
  namespace kc = kilnrt::cuda;
  auto engine = gather_engine("cuda");
  auto ctx = engine->create_context();
  kc::Stream stream(0);
  const Tensor xh = floats({2, 4});
  const std::vector<int64_t> iv = {3, 0, 1};
  kc::DeviceBuffer x(0, 64 * 4), idx(0, 3 * 8), y(0, 6 * 4), tail(0, 1024);
  x.copy_from_host_async(xh.raw(), xh.nbytes(), stream.get());
  idx.copy_from_host_async(iv.data(), 3 * 8, stream.get());
  stream.synchronize();
  auto in = [&](void* xp, void* ip) {
    return std::map<std::string, DeviceTensor>{{"x", {xp, DType::kFloat32, {2, 4}, 0}},
                                               {"idx", {ip, DType::kInt64, {3}, 0}}};
  };
  auto out = [&](void* yp, Shape s = {2, 3}, DType dt = DType::kFloat32) {
    return std::map<std::string, DeviceTensor>{{"y", {yp, dt, s, 0}}};
  };
  void* s = stream.get();
  expect_invalid([&] { ctx->enqueue(in(nullptr, idx.data()), out(y.data()), s); }, "input 'x'", "null");
  expect_invalid([&] { ctx->enqueue(in(static_cast<char*>(x.data()) + 2, idx.data()), out(y.data()), s); }, "input 'x'",
                 "not aligned");
  std::vector<float> host(8);
  expect_invalid([&] { ctx->enqueue(in(host.data(), idx.data()), out(y.data()), s); }, "input 'x'", "");
  expect_invalid(
      [&] {
        ctx->enqueue(in(x.data(), idx.data()), out(y.data(), {2, 2}), s);
      },
      "output 'y'", "expected shape");
  expect_invalid(
      [&] {
        ctx->enqueue(in(x.data(), idx.data()), out(y.data(), {2, 3}, DType::kFloat16), s);
      },
      "output 'y'", "expected dtype");
  expect_invalid([&] { ctx->enqueue(in(x.data(), idx.data()), {}, s); }, "output 'y'", "missing output");
  expect_invalid(
      [&] {
        ctx->enqueue(in(x.data(), idx.data()), {{"z", {y.data(), DType::kFloat32, {2, 3}, 0}}}, s);
      },
      "output 'z'", "no output named");
  // The last 8 bytes of a 1 KiB allocation claimed as a 2x3 float output (24 bytes).
  expect_invalid([&] { ctx->enqueue(in(x.data(), idx.data()), out(static_cast<char*>(tail.data()) + 1016), s); },
                 "output 'y'", "too small");
  // After all that, the context still works.
  ctx->enqueue(in(x.data(), idx.data()), out(y.data()), s);
  std::vector<float> got(6);
  y.copy_to_host_async(got.data(), 6 * 4, stream.get());
  stream.synchronize();
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(got[b * 3 + j], 2.0f * xh.data<float>()[b * 4 + iv[j]]);
}
#endif
