// Convolution tactics timed at build (ops/nn/conv/cuda/conv_tactics.h): every tactic (legacy cuDNN algorithms,
// cuDNN conv+bias+residual+ReLU in one call, cuBLASLt GEMM with epilogue and kilnrt's own GEMM with fused epilogue
// for 1x1 convs) against the CPU reference in
// fp16 / bf16, NCHW / NHWC; the build-time tuner and its timing cache (in memory and file); an engine file round trip
// that keeps the timed tactics. GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "ops/nn/conv/cuda/conv_tactics.h"
#include "backends/cuda/cuda_plan.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "engine/engine_file.h"
#include "kilnrt/engine.h"
#include "passes/fuse_conv_epilogue.h"
#include "passes/optimize.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;
namespace bc = kilnrt::backends::cuda;

namespace {

struct EnvVar {  // sets a variable for one scope
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

void set_precision(ir::Graph& g, const char* p) {
  for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(p);
}

std::map<std::string, Tensor> feeds_for(const ir::Graph& g) { return random_feeds(g, 11, -1.f, 1.f); }

// x -> conv 3x3 + relu (r0) -> the conv under test (k x k, bias, residual r0 when `residual`, activation `act`) ->
// conv 3x3 -> y. With NHWC storage forced, the middle conv reads and writes NHWC (the last one writes the NCHW
// graph output).
ir::Graph model(int64_t k, bool residual, const std::string& act) {
  GraphBuilder b;
  b.input("x", {2, 16, 8, 8});
  b.conv("x", "c0", 16, 32, 3, 1, true);
  b.node("Relu", {"c0"}, {"r0"});
  b.conv("r0", "c1", 32, 32, k, 1, true);
  std::string cur = "c1";
  if (residual) {
    b.node("Add", {cur, "r0"}, {"s1"});
    cur = "s1";
  }
  if (act == "Silu") {
    b.node("Sigmoid", {cur}, {"sg"});
    b.node("Mul", {cur, "sg"}, {"a1"});
    cur = "a1";
  } else if (!act.empty()) {
    b.node(act, {cur}, {"a1"});
    cur = "a1";
  }
  b.conv(cur, "c2", 32, 8, 3, 1, true);
  b.output("c2");
  return b.finish();
}

ir::Node& tested_node(ir::Graph& g) {
  for (ir::Node& n : g.nodes)
    if ((n.op_type == "FusedConv" || n.op_type == "Conv") && n.inputs.at(0) == "r0") return n;
  throw std::runtime_error("no conv reads r0");
}

std::string tactics_of(const ir::Graph& g) {
  kilnrt::cuda::ContextGuard guard(0);
  bc::CudaPlan plan(g, 0);
  std::string s;
  for (const auto& [node, t] : plan.tactics()) s += node + "=" + t + "\n";
  return s;
}

struct Prec {
  const char* name;
  const char* label;  // storage part of the layout label
  double atol, rtol;
};
const Prec kPrecs[] = {{"fp16", "f16", 4e-2, 2e-2}, {"bf16", "bf16", 3e-1, 8e-2}};

}  // namespace

TEST(ConvTacticStrings, FormatParseAndMalformed) {
  bc::ConvChoice c;
  ASSERT_TRUE(bc::parse_choice("cudnn-fused:1", &c));
  EXPECT_EQ(c.path, bc::ConvPath::kCudnnFused);
  EXPECT_EQ(c.algo, 1);
  ASSERT_TRUE(bc::parse_choice("cublaslt:3", &c));
  EXPECT_EQ(c.path, bc::ConvPath::kCublasLt);
  EXPECT_EQ(bc::choice_to_string(c), "cublaslt:3");
  ASSERT_TRUE(bc::parse_choice("pw-mma:1", &c));
  EXPECT_EQ(c.path, bc::ConvPath::kPwKernel);
  EXPECT_EQ(bc::choice_to_string(c), "pw-mma:1");
  for (const char* bad : {"", "cudnn", "cudnn:", "cudnn:x", "cudnn:99", "cublaslt:8", "gemm:1", "cudnn:-1", "pw-mma:3"})
    EXPECT_FALSE(bc::parse_choice(bad, &c)) << bad;
  const auto m = bc::parse_tactic_attr("nhwc-f16=cublaslt:0;junk;nchw-f16=cudnn:1;x=bad:1");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(bc::format_tactic_attr(m), "nchw-f16=cudnn:1;nhwc-f16=cublaslt:0");
  EXPECT_EQ(bc::layout_label(true, DType::kBFloat16), "nhwc-bf16");
  EXPECT_EQ(bc::layout_label(false, DType::kFloat32), "nchw-f32");
}

TEST(ConvTacticStrings, TimingCacheFile) {
  const std::string path = ::testing::TempDir() + "kilnrt_timing_cache_test.txt";
  std::remove(path.c_str());
  EnvVar file("KILNRT_TIMING_CACHE", path.c_str());
  bc::timing_cache_clear();
  bc::ConvChoice c;
  EXPECT_FALSE(bc::timing_cache_find("gpu|conv a", &c));
  bc::timing_cache_store("gpu|conv a", {bc::ConvPath::kCudnnFused, 1});
  bc::timing_cache_clear();  // forget the memory: the entry comes back from the file
  ASSERT_TRUE(bc::timing_cache_find("gpu|conv a", &c));
  EXPECT_EQ(bc::choice_to_string(c), "cudnn-fused:1");
  EXPECT_FALSE(bc::timing_cache_find("gpu|conv b", &c));
  bc::timing_cache_clear();
  std::remove(path.c_str());
}

// Every tactic, forced through the node attribute the builder writes, against the CPU reference of the unfused graph.
TEST(CudaConvTactics, EveryTacticMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t k;
    bool residual;
    const char* act;
    std::vector<std::string> tactics;  // applicable ones
  };
  const Case cases[] = {
      {1, true, "Relu", {"cudnn:1", "cudnn-fused:1", "cublaslt:0", "cublaslt:1", "pw-mma:0", "pw-mma:1"}},
      {1, false, "Silu", {"cudnn:1", "cublaslt:0", "pw-mma:0", "pw-mma:1"}},
      {1, true, "", {"cudnn:1", "cudnn-fused:1", "cublaslt:0", "pw-mma:1"}},
      {3, false, "Relu", {"cudnn:1", "cudnn-fused:1"}},
      {3, true, "Relu", {"cudnn:1", "cudnn-fused:1"}},
  };
  for (bool nhwc : {false, true}) {
    EnvVar layout("KILNRT_CUDA_NHWC", nhwc ? "1" : "0");
    for (const Prec& p : kPrecs) {
      for (const Case& cs : cases) {
        for (const std::string& t : cs.tactics) {
          if ((t.rfind("cublaslt", 0) == 0 || t.rfind("pw-mma", 0) == 0) && !nhwc) continue;  // NHWC storage only
          SCOPED_TRACE(std::string(p.name) + (nhwc ? " nhwc" : " nchw") + " k" + std::to_string(cs.k) +
                       (cs.residual ? " +add" : "") + " act '" + cs.act + "' tactic " + t);
          const ir::Graph original = model(cs.k, cs.residual, cs.act);
          ir::Graph g = original;
          passes::optimize_graph(g);
          set_precision(g, p.name);
          ir::Node& n = tested_node(g);
          ASSERT_EQ(n.op_type, "FusedConv");
          const std::string label = std::string(nhwc ? "nhwc-" : "nchw-") + p.label;
          n.attrs[bc::kConvTacticAttr] = string_attr(label + "=" + t);
          const auto feeds = feeds_for(g);
          const int before = bc::tuning_stats().fallbacks;
          const auto want = cudatest::run_cpu(original, feeds);
          const auto got = cudatest::run_cuda(g, feeds);
          EXPECT_EQ(bc::tuning_stats().fallbacks, before) << "the forced tactic did not apply";
          // Three convolutions deep.
          cudatest::expect_tensors_close(got.at("c2"), want.at("c2"), 3 * p.atol, 3 * p.rtol);
          const std::string tactics = tactics_of(g);
          EXPECT_NE(tactics.find("[timed " + label + "=" + t + "]"), std::string::npos) << tactics;
          const size_t line = tactics.find(n.name + "=");
          ASSERT_NE(line, std::string::npos) << tactics;
          const std::string mine = tactics.substr(line, tactics.find('\n', line) - line);
          EXPECT_EQ(mine.find("+nhwc") != std::string::npos, nhwc) << mine;
        }
      }
    }
  }
}

// A plain Conv (no FusedConv epilogue) keeps working with the fused cuDNN call (bias, identity).
TEST(CudaConvTactics, PlainConvWithBias) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(p.name);
    GraphBuilder b;
    b.input("r0", {2, 32, 8, 8});
    b.conv("r0", "y", 32, 16, 3, 1, true);
    b.output("y");
    ir::Graph g = b.finish();
    set_precision(g, p.name);
    tested_node(g).attrs[bc::kConvTacticAttr] = string_attr(std::string("nchw-") + p.label + "=cudnn-fused:1");
    const auto feeds = feeds_for(g);
    const int before = bc::tuning_stats().fallbacks;
    cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at("y"), cudatest::run_cpu(g, feeds).at("y"), p.atol,
                                   p.rtol);
    EXPECT_EQ(bc::tuning_stats().fallbacks, before);
  }
}

// KILNRT_CONV_LT_NCHW=1: cuBLASLt for NCHW 1x1 convs on [N,C,1,1] values (squeeze-excite), with bias, residual and
// ReLU in the GEMM epilogue, or SiLU in a pass afterwards.
TEST(CudaConvTactics, CublasLtOnLayoutFreeNchw) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar lt("KILNRT_CONV_LT_NCHW", "1");
  EnvVar layout("KILNRT_CUDA_NHWC", "0");
  for (const Prec& p : kPrecs) {
    for (const char* act : {"Relu", "Silu"}) {
      SCOPED_TRACE(std::string(p.name) + " " + act);
      GraphBuilder b;
      b.input("r0", {4, 64, 1, 1});
      b.conv("r0", "c1", 64, 64, 1, 1, true);
      b.node("Add", {"c1", "r0"}, {"s1"});
      std::string out = "a1";
      if (std::string(act) == "Silu") {
        b.node("Sigmoid", {"s1"}, {"sg"});
        b.node("Mul", {"s1", "sg"}, {"a1"});
      } else {
        b.node(act, {"s1"}, {"a1"});
      }
      b.output(out);
      const ir::Graph original = b.finish();
      ir::Graph g = original;
      passes::optimize_graph(g);
      set_precision(g, p.name);
      ir::Node& n = tested_node(g);
      ASSERT_EQ(n.op_type, "FusedConv");
      for (const char* t : {"cublaslt:0", "cublaslt:1"}) {
        n.attrs[bc::kConvTacticAttr] = string_attr(std::string("nchw-") + p.label + "=" + t);
        const auto feeds = feeds_for(g);
        const int before = bc::tuning_stats().fallbacks;
        cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at(out), cudatest::run_cpu(original, feeds).at(out),
                                       p.atol, p.rtol);
        EXPECT_EQ(bc::tuning_stats().fallbacks, before) << t << " did not apply";
      }
    }
  }
}

// A stored choice that does not apply (cuBLASLt for a 3x3 conv) falls back to the heuristic, counted, still correct.
TEST(CudaConvTactics, UnusableStoredChoiceFallsBack) {
  KILNRT_SKIP_WITHOUT_GPU();
  ir::Graph g = model(3, false, "Relu");
  const ir::Graph original = g;
  passes::optimize_graph(g);
  set_precision(g, "fp16");
  tested_node(g).attrs[bc::kConvTacticAttr] = string_attr("nchw-f16=cublaslt:0");
  EnvVar layout("KILNRT_CUDA_NHWC", "0");
  const auto feeds = feeds_for(g);
  const int before = bc::tuning_stats().fallbacks;
  cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at("c2"), cudatest::run_cpu(original, feeds).at("c2"),
                                 3 * kPrecs[0].atol, 3 * kPrecs[0].rtol);
  EXPECT_EQ(bc::tuning_stats().fallbacks, before + 1);
}

// The build-time tuner: every conv of a static-shape plan is timed per layout, winners recorded; a second plan hits
// the timing cache; the recorded tactics run correctly.
TEST(CudaConvTactics, TuningRecordsWinnersAndCaches) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar layout("KILNRT_CUDA_NHWC", "1");
  ir::Graph g = model(1, true, "Relu");
  const ir::Graph original = g;
  passes::optimize_graph(g);
  set_precision(g, "fp16");
  bc::timing_cache_clear();
  auto tune = [&](std::map<std::string, std::string>* timed) {
    kilnrt::cuda::ContextGuard guard(0);
    bc::TacticTimingScope scope(0, timed);
    bc::CudaPlan plan(g, 0);
  };
  const bc::TuningStats s0 = bc::tuning_stats();
  std::map<std::string, std::string> first, second;
  tune(&first);
  const bc::TuningStats s1 = bc::tuning_stats();
  // Recorded: the layouts where a tactic beat cuDNN's heuristic (the others keep it and store nothing).
  EXPECT_LE(first.size(), 3u);
  for (const auto& [node, attr] : first) {
    const auto m = bc::parse_tactic_attr(attr);
    EXPECT_FALSE(m.empty()) << node << ": " << attr;
    for (const auto& [label, c] : m) EXPECT_TRUE(label == "nchw-f16" || label == "nhwc-f16") << attr;
  }
  EXPECT_EQ(s1.timed - s0.timed, 6) << "three convs, NCHW and NHWC";
  tune(&second);
  const bc::TuningStats s2 = bc::tuning_stats();
  EXPECT_EQ(s2.timed, s1.timed) << "the second build is answered by the timing cache";
  EXPECT_EQ(s2.cache_hits - s1.cache_hits, 6);
  EXPECT_EQ(first, second);
  // The recorded tactics, as the builder stores them, give the CPU reference's result.
  for (ir::Node& n : g.nodes)
    if (first.count(n.name)) n.attrs[bc::kConvTacticAttr] = string_attr(first[n.name]);
  const auto feeds = feeds_for(g);
  const int before = bc::tuning_stats().fallbacks;
  cudatest::expect_tensors_close(cudatest::run_cuda(g, feeds).at("c2"), cudatest::run_cpu(original, feeds).at("c2"),
                                 3 * kPrecs[0].atol, 3 * kPrecs[0].rtol);
  EXPECT_EQ(bc::tuning_stats().fallbacks, before);
  bc::timing_cache_clear();
  for (ir::Node& n : g.nodes) n.attrs.erase(bc::kConvTacticAttr);  // a stored choice is never timed again
  std::map<std::string, std::string> third;
  tune(&third);
  EXPECT_EQ(bc::tuning_stats().timed - s2.timed, 6) << "cleared cache: timed again";
}

// build_engine times the convs and stores the winners with the nodes; loading runs them without timing again.
TEST(CudaConvTactics, EngineFileKeepsTimedTactics) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string onnx = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.onnx";
  BuildOptions o;
  o.device = "cpu";
  o.profiles = {{{"x", {2, 3, 224, 224}, {2, 3, 224, 224}, {2, 3, 224, 224}}}};
  const std::vector<uint8_t> cpu_bytes = build_engine(onnx, o);
  o.device = "cuda";
  o.fp16 = true;
  bc::timing_cache_clear();
  const std::vector<uint8_t> bytes = build_engine(onnx, o);
  const engine::LoadedEngine e = engine::deserialize_engine(bytes.data(), bytes.size(), "gpu");
  int stored = 0;
  for (const ir::Node& n : e.graph.nodes)
    if (n.has_attr(bc::kConvTacticAttr)) {
      ++stored;
      EXPECT_FALSE(bc::parse_tactic_attr(n.attr_string(bc::kConvTacticAttr)).empty()) << n.name;
    }
  EXPECT_GT(stored, 0) << "cuBLASLt beats cuDNN on the NHWC 1x1 convs";
  int shown = 0;
  for (const auto& [node, t] : e.meta.layer_tactics) shown += t.find("[timed ") != std::string::npos;
  EXPECT_EQ(shown, stored);
  Tensor x = Tensor::empty(DType::kFloat32, {2, 3, 224, 224});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  auto run = [&](const std::vector<uint8_t>& b) {
    auto engine = Engine::from_bytes(b.data(), b.size(), "<memory>", 0);
    const auto out = engine->run({{engine->inputs()[0].name, x}});
    const Tensor& y = out.begin()->second;
    return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
  };
  const std::vector<float> ref = run(cpu_bytes);
  const bc::TuningStats before = bc::tuning_stats();
  const std::vector<float> got = run(bytes);
  const bc::TuningStats after = bc::tuning_stats();
  EXPECT_EQ(after.timed, before.timed) << "loading does not time";
  EXPECT_EQ(after.fallbacks, before.fallbacks);
  ASSERT_EQ(got.size(), ref.size());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    dot += double(ref[i]) * got[i];
    na += double(ref[i]) * ref[i];
    nb += double(got[i]) * got[i];
  }
  EXPECT_GT(dot / std::sqrt(na * nb), 0.999);
  // Building again in the same process: no timing, same choices.
  const std::vector<uint8_t> again = build_engine(onnx, o);
  EXPECT_EQ(bc::tuning_stats().timed, after.timed);
  const engine::LoadedEngine e2 = engine::deserialize_engine(again.data(), again.size(), "gpu");
  for (size_t i = 0; i < e.graph.nodes.size(); ++i)
    if (e.graph.nodes[i].has_attr(bc::kConvTacticAttr))
      EXPECT_EQ(e2.graph.nodes[i].attr_string(bc::kConvTacticAttr), e.graph.nodes[i].attr_string(bc::kConvTacticAttr));
}
