// FusedPointwise on CUDA: the NVRTC kernel against the CPU reference of the same fused graph in fp32 /
// fp16 / bf16 storage, on shapes that take the vector path and the scalar (strided) path; an engine built with fused
// chains loads without running NVRTC (compile and disk-cache counters unchanged) and matches a CPU engine; a damaged
// stored image is recompiled from the node's program. Skips with a message without a GPU.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_plan.h"
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_code.h"
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_codegen.h"
#include "conv_fusion_test_util.h"
#include "cuda/nvrtc_compiler.h"
#include "cuda_backend_test_util.h"
#include "engine_features_model.h"
#include "kilnrt/engine.h"
#include "onnx_test_writer.h"
#include "passes/fuse_pointwise.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

struct Prec {
  const char* name;
  double atol, rtol;
};
const Prec kPrecs[] = {{"", 1e-5, 1e-5}, {"fp16", 2e-2, 1e-2}, {"bf16", 1.5e-1, 3e-2}};

std::map<std::string, Tensor> feeds_for(const ir::Graph& g) {
  std::map<std::string, Tensor> in;
  uint32_t seed = 5;
  for (const std::string& name : g.inputs) {
    const ir::TensorType* t = g.type_of(name);
    const Shape s = ir::sym_shape_to_shape(t->shape);
    if (t->dtype == DType::kBool) {
      Tensor b = Tensor::empty(DType::kBool, s);
      for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = (i * 7 + 3) % 5 < 2;
      in[name] = b;
    } else {
      in[name] = random_tensor(s, seed++, -2.f, 2.f);
    }
  }
  return in;
}

long nvrtc_work() {
  const kilnrt::cuda::NvrtcStats s = kilnrt::cuda::nvrtc_stats();
  return s.compilations + s.disk_hits;
}

// relu(x * gamma + r) * 0.5 + where(cond, sigmoid(x), -x), shapes [N,C,H,W] with gamma [C,1,1], cond [1,1,H,W].
ir::Graph chain(const Shape& x) {
  GraphBuilder b(17);
  b.input("x", x);
  b.input("r", x);
  b.g.inputs.push_back("cond");
  ir::TensorType bt;
  bt.dtype = DType::kBool;
  bt.has_shape = true;
  bt.shape = ir::shape_to_sym({1, 1, x[2], x[3]});
  b.g.types["cond"] = bt;
  b.random_constant("gamma", {x[1], 1, 1});
  b.constant("half", Tensor::from_vector(std::vector<float>{0.5f}, DType::kFloat32, {}));
  b.node("Mul", {"x", "gamma"}, {"a"});
  b.node("Add", {"a", "r"}, {"s"});
  b.node("Relu", {"s"}, {"t"});
  b.node("Mul", {"t", "half"}, {"u"});
  b.node("Sigmoid", {"x"}, {"sg"});
  b.node("Neg", {"x"}, {"nx"});
  b.node("Where", {"cond", "sg", "nx"}, {"w"});
  b.node("Add", {"u", "w"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  return b.g;
}

// (x * v + r) / 2 with v [W] varying along the last dim only: vector loads of v at a per-vector offset.
ir::Graph last_dim_chain(const Shape& x) {
  GraphBuilder b(17);
  b.input("x", x);
  b.input("r", x);
  b.input("v", {x.back()});
  b.constant("two", Tensor::from_vector(std::vector<float>{2.f}, DType::kFloat32, {}));
  b.node("Mul", {"x", "v"}, {"a"});
  b.node("Add", {"a", "r"}, {"s"});
  b.node("Div", {"s", "two"}, {"y"});
  b.g.outputs = {"y"};
  passes::infer_shapes(b.g);
  return b.g;
}

void check(const Shape& x, const Prec& p, bool last_dim = false) {
  ir::Graph g = last_dim ? last_dim_chain(x) : chain(x);
  ASSERT_EQ(passes::fuse_pointwise(g), 1u);
  passes::infer_shapes(g);
  if (*p.name)
    for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(p.name);
  const auto feeds = feeds_for(g);
  const auto want = cudatest::run_cpu(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  cudatest::expect_tensors_close(got.at("y"), want.at("y"), p.atol, p.rtol);
}

// Needs NVRTC, not a GPU: the source generated for every opcode compiles (sm_90 cubin) with all seven kernels.
TEST(CudaFusedPointwise, SourceForEveryOpcodeCompiles) {
  if (!backends::cuda::fused_pointwise_available()) GTEST_SKIP() << "NVRTC not found";
  ops::nn::PwProgram p;
  p.num_inputs = 3;  // x, y (float), cond (bool)
  int last = 0;
  for (int op = 1; op < 100; ++op) {
    const int arity = ops::nn::pointwise_arity(op);
    if (arity < 0) continue;
    ops::nn::PwInstr in;
    in.op = op;
    in.p0 = op == ops::nn::kPwCast ? 1.f : 0.25f;
    in.p1 = 0.75f;
    if (arity >= 1) in.a = op == ops::nn::kPwWhere ? 2 : last;
    if (arity >= 2) in.b = op == ops::nn::kPwWhere ? last : 1;
    if (arity >= 3) in.c = 0;
    p.code.push_back(in);
    last = p.num_inputs + static_cast<int>(p.code.size()) - 1;
  }
  const std::string src = backends::cuda::fused_pointwise_source(p, {false, false, true});
  kilnrt::cuda::KernelCompileOptions o;
  o.disk_cache = false;
  const auto code = kilnrt::cuda::compile_cuda(src, backends::cuda::fused_pointwise_kernel_names(),
                                               kilnrt::cuda::CompileTarget{90, true}, o);
  EXPECT_EQ(code->lowered_names.size(), 7u);
  EXPECT_FALSE(code->image.empty());
}

TEST(CudaFusedPointwise, MatchesCpuInEveryPrecisionVectorAndScalarPaths) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(std::string("precision ") + (*p.name ? p.name : "fp32"));
    check({2, 16, 8, 8}, p);        // W % 8 == 0: vector loads, cond strided with a contiguous last dim
    check({3, 5, 7, 9}, p);         // odd sizes: scalar path
    check({2, 4, 6, 16}, p, true);  // a [W] operand: strided with a contiguous last dim, vector path
    check({2, 4, 6, 6}, p, true);   // W % 4 != 0: scalar path
  }
}

TEST(CudaFusedPointwise, TacticNamesTheGeneratedKernel) {
  KILNRT_SKIP_WITHOUT_GPU();
  ir::Graph g = chain({1, 4, 4, 4});
  ASSERT_EQ(passes::fuse_pointwise(g), 1u);
  passes::infer_shapes(g);
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::string tactics;
  for (const auto& [node, t] : plan.tactics()) tactics += t + " ";
  EXPECT_NE(tactics.find("nvrtc:fused-pointwise(mul+add+relu+mul+sigmoid+neg+where+add)"), std::string::npos)
      << tactics;
}

TEST(CudaFusedPointwise, DamagedStoredImageIsRecompiled) {
  KILNRT_SKIP_WITHOUT_GPU();
  ir::Graph g = chain({2, 8, 4, 8});
  ASSERT_EQ(passes::fuse_pointwise(g), 1u);
  passes::infer_shapes(g);
  ASSERT_EQ(backends::cuda::embed_fused_pointwise_code(g, 0), 1u);
  ir::Node& n = g.nodes[0];
  ASSERT_TRUE(n.has_attr(backends::cuda::kPwCodeAttr));
  const auto feeds = feeds_for(g);
  const auto want = cudatest::run_cpu(g, feeds);
  // Intact: the plan loads the stored image, no NVRTC.
  long before = nvrtc_work();
  cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at("y"), want.at("y"), 1e-5, 1e-5);
  EXPECT_EQ(nvrtc_work(), before);
  // Damaged: the driver refuses it, the layer regenerates and compiles the kernel (a warning says so).
  n.attrs[backends::cuda::kPwCodeAttr].s = std::string(64, '\x5a');
  before = nvrtc_work();
  cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at("y"), want.at("y"), 1e-5, 1e-5);
  EXPECT_GT(nvrtc_work(), before);
}

std::string model_file() {
  using namespace kilnrt::onnx_test;
  ModelSpec m;
  GraphSpec& g = m.graph;
  const std::vector<DimSpec> shape = {2, 16, 8, 8};
  g.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, shape));
  g.inputs.push_back(ValueInfoSpec::tensor("r", kFloat, shape));
  std::vector<float> gamma(16);
  for (int i = 0; i < 16; ++i) gamma[i] = 0.1f * static_cast<float>(i) - 0.7f;
  g.initializers.push_back(TensorSpec::float_raw("gamma", {16, 1, 1}, gamma));
  g.initializers.push_back(TensorSpec::float_raw("three", {}, {3.f}));
  g.nodes.push_back(NodeSpec{"Mul", {"x", "gamma"}, {"a"}, {}, "scale"});
  g.nodes.push_back(NodeSpec{"Add", {"a", "r"}, {"s"}, {}, "residual"});
  g.nodes.push_back(NodeSpec{"HardSigmoid", {"s"}, {"h"}, {}, "hsig"});
  g.nodes.push_back(NodeSpec{"Add", {"h", "three"}, {"y"}, {}, "plus3"});
  g.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, shape));
  return enginetest::write_model(::testing::TempDir() + "/kilnrt_fused_pointwise.onnx", m.serialize());
}

TEST(CudaFusedPointwise, EngineStoresTheCodeAndLoadsWithoutNvrtc) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string model = model_file();
  BuildOptions cpu;
  const std::vector<uint8_t> cpu_bytes = build_engine(model, cpu);
  const auto cpu_engine = Engine::from_bytes(cpu_bytes.data(), cpu_bytes.size());
  for (const LayerInfo& l : cpu_engine->layers()) EXPECT_NE(l.op_type, "FusedPointwise") << "CPU engines do not fuse";
  std::map<std::string, Tensor> in = {{"x", random_tensor({2, 16, 8, 8}, 1)}, {"r", random_tensor({2, 16, 8, 8}, 2)}};
  const Tensor want = cpu_engine->run(in).at("y");
  for (const bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    BuildOptions o;
    o.device = "cuda";
    o.fp16 = fp16;
    const long built = nvrtc_work();
    const std::vector<uint8_t> bytes = build_engine(model, o);
    EXPECT_GT(nvrtc_work(), built);  // compiled (or read from the disk cache) at build time
    const long before = nvrtc_work();
    const auto engine = Engine::from_bytes(bytes.data(), bytes.size());
    size_t fused = 0;
    for (const LayerInfo& l : engine->layers())
      if (l.op_type == "FusedPointwise") {
        ++fused;
        EXPECT_NE(l.tactic.find("nvrtc:fused-pointwise(mul+add+hardsigmoid+add)"), std::string::npos) << l.tactic;
      }
    EXPECT_EQ(fused, 1u);
    const Tensor got = engine->run(in).at("y");
    EXPECT_EQ(nvrtc_work(), before) << "loading and running the engine ran NVRTC";
    cudatest::expect_tensors_close(got, want, fp16 ? 1e-2 : 1e-5, fp16 ? 1e-2 : 1e-5);
  }
}

}  // namespace
