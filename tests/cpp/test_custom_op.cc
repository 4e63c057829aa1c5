// Custom ops (include/kilnrt/custom_op.h): registration checks, models using them built and run on the CPU
// (elementwise op with an attribute, op with its own shape function on dynamic shapes), errors naming the node or
// the op (callback failures, engines whose op is not registered), and the same models on CUDA through NVRTC kernels
// (skipped with a message without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine_file.h"
#include "ir/graph.h"
#include "kilnrt/custom_op.h"
#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"

namespace kilnrt {
namespace {

namespace ot = onnx_test;
constexpr const char* kDomain = "kilnrt.test";

// y = alpha * tanh(x), float32; CUDA through NVRTC with the elementwise convention and alpha as a float argument.
const char* kScaledTanhCuda = R"(
extern "C" __global__ void scaled_tanh(const float* x, float* y, long long n, float alpha) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * tanhf(x[i]);
})";

// y[r] = sum of row r of x (the last dim): one block of 128 threads per row; launch dims and the row length come
// from the launch function, which sees the shapes.
const char* kRowSumCuda = R"(
extern "C" __global__ void row_sum(const float* x, float* y, long long rows, long long cols) {
  __shared__ float part[128];
  const long long r = blockIdx.x;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[r * cols + c];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0 && r < rows) y[r] = part[0];
})";

int g_scaled_tanh_cpu_calls = 0;

void register_test_ops() {
  static bool done = false;
  if (done) return;
  done = true;
  CustomOp tanh_op;
  tanh_op.domain = kDomain;
  tanh_op.name = "ScaledTanh";
  tanh_op.dtypes = {DType::kFloat32};
  tanh_op.doc = "alpha * tanh(x) (test)";
  tanh_op.cpu = [](CustomCpuContext& c) {
    ++g_scaled_tanh_cpu_calls;
    const Tensor& x = *c.inputs.at(0);
    if (x.dtype() != DType::kFloat32) throw Error(ErrorCode::kUnsupported, "ScaledTanh takes float32");
    const float alpha = c.node.attr_float("alpha", 1.f);
    Tensor y = Tensor::empty(DType::kFloat32, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = alpha * std::tanh(x.data<float>()[i]);
    c.outputs[0] = y;
  };
  NvrtcCustomKernel k = nvrtc_custom_kernel(kScaledTanhCuda, "scaled_tanh", nullptr, {{"alpha", 1.f}});
  tanh_op.cuda = k.cuda;
  tanh_op.cuda_prepare = k.prepare;
  register_custom_op(tanh_op);

  // RowSum: [..., n] -> [...]: its own shape function; the last dim must be known when it runs.
  CustomOp row_sum;
  row_sum.domain = kDomain;
  row_sum.name = "RowSum";
  row_sum.shape = [](CustomShapeContext& c) {
    const CustomTensorType& x = c.inputs.at(0);
    if (!x.has_shape || x.shape.empty()) throw Error(ErrorCode::kInvalidModel, "RowSum needs rank >= 1");
    c.outputs[0].dtype = x.dtype;
    c.outputs[0].shape.assign(x.shape.begin(), x.shape.end() - 1);
  };
  row_sum.cpu = [](CustomCpuContext& c) {
    const Tensor& x = *c.inputs.at(0);
    const int64_t cols = x.shape().back(), rows = cols ? x.numel() / cols : 0;
    Shape ys(x.shape().begin(), x.shape().end() - 1);
    Tensor y = Tensor::zeros(DType::kFloat32, ys);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) y.data<float>()[r] += x.data<float>()[r * cols + j];
    c.outputs[0] = y;
  };
  NvrtcCustomKernel rk =
      nvrtc_custom_kernel(kRowSumCuda, "row_sum", [](const std::vector<Shape>& in, const std::vector<Shape>& out) {
        CustomLaunchDims d;
        d.grid = static_cast<unsigned>(std::max<int64_t>(shape_numel(out[0]), 1));
        d.block = 128;
        d.args = {in[0].back()};
        return d;
      });
  row_sum.cuda = rk.cuda;
  row_sum.cuda_prepare = rk.prepare;
  register_custom_op(row_sum);

  // Throws: a CPU function failing with a non-kilnrt exception.
  CustomOp throws;
  throws.domain = kDomain;
  throws.name = "Throws";
  throws.cpu = [](CustomCpuContext&) { throw std::runtime_error("deliberate failure in the CPU function"); };
  register_custom_op(throws);
}

std::string write_model(const std::string& path, const std::vector<ot::NodeSpec>& nodes, const std::string& out,
                        const std::vector<ot::DimSpec>& in_dims, const std::vector<ot::DimSpec>& out_dims) {
  ot::ModelSpec m;
  m.opsets = {{"", 17}, {kDomain, 1}};
  m.graph.inputs.push_back(ot::ValueInfoSpec::tensor("x", ot::kFloat, in_dims));
  m.graph.nodes = nodes;
  m.graph.outputs.push_back(ot::ValueInfoSpec::tensor(out, ot::kFloat, out_dims));
  std::ofstream f(path, std::ios::binary);
  f << m.serialize();
  return path;
}

ot::NodeSpec custom_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                         std::vector<ot::AttrSpec> attrs = {}, const std::string& name = "") {
  ot::NodeSpec n{op, std::move(in), std::move(out), std::move(attrs), name.empty() ? "my_" + op : name};
  n.domain = kDomain;
  return n;
}

Tensor ramp(const Shape& s, float lo, float step) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = lo + step * static_cast<float>(i % 97);
  return t;
}

// Model: x -> Relu -> ScaledTanh(alpha) -> Add(x) -> y, so the custom op sits between built-in ops.
std::string tanh_model(const std::string& path, float alpha) {
  return write_model(path,
                     {ot::NodeSpec{"Relu", {"x"}, {"r"}},
                      custom_node("ScaledTanh", {"r"}, {"t"}, {ot::AttrSpec::Float("alpha", alpha)}),
                      ot::NodeSpec{"Add", {"t", "x"}, {"y"}}},
                     "y", {ot::DimSpec::named("batch"), 5}, {ot::DimSpec::named("batch"), 5});
}

void expect_tanh_model(const Tensor& x, const Tensor& y, float alpha) {
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    EXPECT_NEAR(y.data<float>()[i], alpha * std::tanh(std::max(v, 0.f)) + v, 1e-5f) << "element " << i;
  }
}

std::string tmp(const std::string& name) { return ::testing::TempDir() + "kilnrt_custom_" + name; }

template <class F>
void expect_error_with(F f, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected a kilnrt::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(CustomOp, RegistrationIsChecked) {
  register_test_ops();
  EXPECT_TRUE(is_custom_op_registered(kDomain, "ScaledTanh"));
  EXPECT_FALSE(is_custom_op_registered(kDomain, "Nope"));
  const std::vector<std::string> all = registered_custom_ops();
  EXPECT_NE(std::find(all.begin(), all.end(), "kilnrt.test:RowSum"), all.end());
  CustomOp dup;
  dup.domain = kDomain;
  dup.name = "ScaledTanh";
  dup.since_version = 1;
  dup.until_version = 3;
  dup.cpu = [](CustomCpuContext&) {};
  expect_error_with([&] { register_custom_op(dup); }, ErrorCode::kInvalidArgument,
                    {"kilnrt.test:ScaledTanh", "already"});
  dup.domain = "";
  expect_error_with([&] { register_custom_op(dup); }, ErrorCode::kInvalidArgument, {"domain"});
  dup.domain = "ai.onnx";
  expect_error_with([&] { register_custom_op(dup); }, ErrorCode::kInvalidArgument, {"domain"});
  dup.domain = kDomain;
  dup.name = "NoCpu";
  dup.cpu = nullptr;
  expect_error_with([&] { register_custom_op(dup); }, ErrorCode::kInvalidArgument, {"CPU function"});
  EXPECT_FALSE(is_custom_op_registered(kDomain, "NoCpu"));
}

TEST(CustomOp, CpuEngineRunsElementwiseOpWithAttribute) {
  register_test_ops();
  const std::string model = tanh_model(tmp("tanh.onnx"), 2.5f);
  BuildOptions opt;
  opt.profiles = {{{"x", {1, 5}, {4, 5}, {8, 5}}}};
  std::vector<uint8_t> bytes = build_engine(model, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "tanh.engine");
  const int before = g_scaled_tanh_cpu_calls;
  for (int64_t batch : {1, 3, 8}) {
    Tensor x = ramp({batch, 5}, -2.f, 0.05f);
    auto out = engine->run({{"x", x}});
    expect_tanh_model(x, out.at("y"), 2.5f);
  }
  EXPECT_EQ(g_scaled_tanh_cpu_calls, before + 3);
}

TEST(CustomOp, OwnShapeFunctionKeepsDynamicDims) {
  register_test_ops();
  const std::string model =
      write_model(tmp("rowsum.onnx"), {custom_node("RowSum", {"x"}, {"s"}), ot::NodeSpec{"Neg", {"s"}, {"y"}}}, "y",
                  {ot::DimSpec::named("batch"), 7}, {ot::DimSpec::named("batch")});
  BuildOptions opt;
  opt.profiles = {{{"x", {1, 7}, {2, 7}, {6, 7}}}};
  std::vector<uint8_t> bytes = build_engine(model, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "rowsum.engine");
  ASSERT_EQ(engine->outputs().size(), 1u);
  EXPECT_EQ(engine->outputs()[0].shape, (Shape{-1}));  // the symbolic batch dim survived the custom shape function
  Tensor x = ramp({6, 7}, -1.f, 0.1f);
  Tensor y = engine->run({{"x", x}}).at("y");
  ASSERT_EQ(y.shape(), (Shape{6}));
  for (int64_t r = 0; r < 6; ++r) {
    double s = 0;
    for (int64_t c = 0; c < 7; ++c) s += x.data<float>()[r * 7 + c];
    EXPECT_NEAR(y.data<float>()[r], -s, 1e-5) << "row " << r;
  }
}

TEST(CustomOp, CallbackErrorsNameTheNode) {
  register_test_ops();
  // The shape function throws for a rank-0 input: the build error names the node and keeps the message.
  const std::string bad = write_model(tmp("tanh_rowsum_rank0.onnx"),
                                      {custom_node("RowSum", {"x"}, {"y"}, {}, "sum_of_scalar")}, "y", {}, {});
  expect_error_with([&] { build_engine(bad, {}); }, ErrorCode::kInvalidModel, {"sum_of_scalar", "RowSum needs rank"});
  // A CPU function throwing std::runtime_error: a kilnrt::Error naming the node, with the exception's message.
  const std::string throwing =
      write_model(tmp("throws.onnx"), {custom_node("Throws", {"x"}, {"y"}, {}, "thrower")}, "y", {2}, {2});
  std::vector<uint8_t> bytes = build_engine(throwing, {});
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "throws.engine");
  Tensor x = ramp({2}, 0.f, 1.f);
  expect_error_with(
      [&] {
        engine->run({{"x", x}});
      },
      ErrorCode::kInvalidArgument, {"thrower", "deliberate failure in the CPU function"});
}

TEST(CustomOp, UnregisteredOpIsAClearErrorAtBuildAndLoad) {
  register_test_ops();
  const std::string model = write_model(
      tmp("unknown.onnx"), {custom_node("NotRegistered", {"x"}, {"y"}, {}, "mystery")}, "y", {2, 3}, {2, 3});
  expect_error_with([&] { build_engine(model, {}); }, ErrorCode::kUnsupported,
                    {"mystery", "kilnrt.test:NotRegistered", "not registered"});
  // An engine file that records the op by domain/name (as one built in another process would) fails to load.
  ir::Graph g;
  g.name = "g";
  g.opsets[""] = 17;
  g.opsets[kDomain] = 1;
  g.inputs = {"x"};
  g.outputs = {"y"};
  ir::TensorType t;
  t.dtype = DType::kFloat32;
  t.has_shape = true;
  t.shape = ir::shape_to_sym({2, 3});
  g.types["x"] = t;
  g.types["y"] = t;
  ir::Node n;
  n.name = "mystery";
  n.domain = kDomain;
  n.op_type = "NotRegistered";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  engine::EngineMetadata meta;
  meta.format_version = engine::kEngineFormatVersion;
  meta.kilnrt_version = version();
  meta.target = "cpu";
  meta.inputs.push_back(TensorInfo{"x", DType::kFloat32, {2, 3}});
  meta.outputs.push_back(TensorInfo{"y", DType::kFloat32, {2, 3}});
  meta.layer_tactics.emplace_back("mystery", "cpu:reference");
  std::vector<uint8_t> bytes = engine::serialize_engine(g, meta);
  expect_error_with([&] { Engine::from_bytes(bytes.data(), bytes.size(), "foreign.engine"); }, ErrorCode::kUnsupported,
                    {"foreign.engine", "kilnrt.test:NotRegistered", "not registered"});
  // The file itself records the op by domain and name.
  const std::string raw(bytes.begin(), bytes.end());
  EXPECT_NE(raw.find("kilnrt.test"), std::string::npos);
  EXPECT_NE(raw.find("NotRegistered"), std::string::npos);
}

// ---- CUDA ------------------------------------------------------------------------------------------------------

#define SKIP_WITHOUT_GPU()                                                    \
  do {                                                                        \
    std::string why;                                                          \
    if (!cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU: " << why; \
  } while (0)

TEST(CustomOpCuda, NvrtcElementwiseOpMatchesCpuAcrossShapesAndReplays) {
  SKIP_WITHOUT_GPU();
  register_test_ops();
  const std::string model = tanh_model(tmp("tanh_cuda.onnx"), 0.75f);
  BuildOptions opt;
  opt.device = "cuda";
  opt.profiles = {{{"x", {1, 5}, {4, 5}, {64, 5}}}};
  std::vector<uint8_t> bytes = build_engine(model, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "tanh_cuda.engine", 0);
  bool custom_layer = false;
  for (const LayerInfo& l : engine->layers())
    custom_layer |= l.placement == "cuda" && l.tactic == "custom:kilnrt.test:ScaledTanh";
  EXPECT_TRUE(custom_layer) << "the custom op did not run as a CUDA layer";
  auto ctx = engine->create_context();
  const int cpu_calls = g_scaled_tanh_cpu_calls;
  // Same shape several times (graph capture, then replays with new data), then other shapes.
  for (int64_t batch : {4, 4, 4, 64, 1, 4}) {
    Tensor x = ramp({batch, 5}, -2.f + 0.01f * static_cast<float>(batch), 0.04f);
    expect_tanh_model(x, ctx->run({{"x", x}}).at("y"), 0.75f);
  }
  EXPECT_EQ(g_scaled_tanh_cpu_calls, cpu_calls) << "the CUDA engine ran the custom op on the CPU";
}

TEST(CustomOpCuda, LaunchFunctionSeesShapes) {
  SKIP_WITHOUT_GPU();
  register_test_ops();
  const std::string model = write_model(tmp("rowsum_cuda.onnx"), {custom_node("RowSum", {"x"}, {"y"})}, "y",
                                        {ot::DimSpec::named("batch"), 300}, {ot::DimSpec::named("batch")});
  BuildOptions opt;
  opt.device = "cuda";
  opt.profiles = {{{"x", {1, 300}, {8, 300}, {33, 300}}}};
  std::vector<uint8_t> bytes = build_engine(model, opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "rowsum_cuda.engine", 0);
  for (int64_t rows : {33, 1, 8}) {
    Tensor x = ramp({rows, 300}, -1.f, 0.02f);
    Tensor y = engine->run({{"x", x}}).at("y");
    ASSERT_EQ(y.shape(), (Shape{rows}));
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < 300; ++c) s += x.data<float>()[r * 300 + c];
      EXPECT_NEAR(y.data<float>()[r], s, 1e-3) << "row " << r;
    }
  }
}

// An op registered without a CUDA implementation: a CUDA build fails naming the node (never a silent CPU fallback).
TEST(CustomOpCuda, OpWithoutCudaImplementationFailsCudaBuild) {
  SKIP_WITHOUT_GPU();
  register_test_ops();
  const std::string model =
      write_model(tmp("throws_cuda.onnx"), {custom_node("Throws", {"x"}, {"y"}, {}, "no_cuda_impl")}, "y", {2}, {2});
  BuildOptions opt;
  opt.device = "cuda";
  expect_error_with([&] { build_engine(model, opt); }, ErrorCode::kUnsupported,
                    {"no_cuda_impl", "without a CUDA implementation"});
}

}  // namespace
}  // namespace kilnrt
