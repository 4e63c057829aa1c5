// cuBLASLt algorithms timed at build for GEMM layers (ops/nn/gemm/cuda/gemm_tactics.h): every candidate the
// tuner lists, stored as the node's kilnrt_gemm_algo, gives the CPU reference's result (FusedMatMul with bias / GELU
// / residual epilogues, MatMul tall and batched, Gemm) in float32 / float16 / bfloat16; the attribute's encoding;
// the round trip through an engine file; stored algorithms that are refused (other GPU, malformed, rejected by
// cublasLtMatmulAlgoCheck) fall back to the heuristic; identical problems are timed once (process cache and
// KILNRT_TIMING_CACHE file). GPU tests skip with a message without a GPU.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "attention_test_util.h"
#include "ops/cuda/tactic_timing.h"
#include "ops/nn/gemm/cuda/gemm_tactics.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "tuning_test_util.h"
#include "engine/cuda_engine.h"
#include "engine/engine_file.h"
#include "engine_features_model.h"
#include "kilnrt/engine.h"

namespace kilnrt::cudatest {
namespace {

namespace bc = kilnrt::backends::cuda;
using attntest::random_tensor;

struct EnvVar {  // sets a variable for one scope
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

struct Prec {
  const char* name;  // "" = float32 (no attribute)
  DType dt;
  double u;  // unit roundoff of the storage dtype
};
const Prec kPrecs[] = {
    {"", DType::kFloat32, 0.0}, {"fp16", DType::kFloat16, 1.0 / 2048}, {"bf16", DType::kBFloat16, 1.0 / 256}};

Tensor rounded(Tensor t, DType dt) {
  Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
  for (int64_t i = 0; i < r.numel(); ++i) {
    float& v = r.data<float>()[i];
    if (dt == DType::kFloat16) v = half_to_float(float_to_half(v));
    if (dt == DType::kBFloat16) v = bfloat16_to_float(float_to_bfloat16(v));
  }
  return r;
}

using testing_conv::float_attr;
using testing_conv::int_attr;
using testing_conv::string_attr;

struct Case {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  std::string node;  // the GEMM node under test
};

// One GEMM layer of kind `kind` in precision p; inputs and weights rounded to the storage dtype.
Case make_case(const std::string& kind, const Prec& p) {
  attntest::Builder b;
  std::vector<std::string> ins;
  ir::Node* n = nullptr;
  if (kind.rfind("fused", 0) == 0) {  // fused-bias, fused-gelu, fused-gelu-tanh, fused-residual
    b.input("a", {2, 37, 64});
    b.constant("w", rounded(random_tensor({64, 80}, 11, -0.25f, 0.25f), p.dt));
    b.constant("bias", rounded(random_tensor({80}, 12), p.dt));
    ins = {"a", "w", "bias"};
    if (kind == "fused-residual") ins.push_back(b.input("res", {2, 37, 80}));
    n = &b.node("FusedMatMul", ins, "y");
    n->domain = "com.kilnrt";
    n->attrs["activation"] = string_attr(kind.rfind("fused-gelu", 0) == 0 ? "gelu" : "none");
    n->attrs["approximate"] = string_attr(kind == "fused-gelu-tanh" ? "tanh" : "none");
    b.g.opsets["com.kilnrt"] = 1;
  } else if (kind == "matmul") {  // constant weights: one tall GEMM
    b.input("a", {2, 37, 64});
    b.constant("w", rounded(random_tensor({64, 48}, 13, -0.25f, 0.25f), p.dt));
    n = &b.node("MatMul", {"a", "w"}, "y");
  } else if (kind == "matmul-batched") {  // two activations: a strided batched GEMM
    b.input("a", {4, 37, 64});
    b.input("w", {4, 64, 40}, -0.25f, 0.25f);
    n = &b.node("MatMul", {"a", "w"}, "y");
  } else {  // gemm: transB, alpha, bias row as the BIAS epilogue
    b.input("a", {74, 64});
    b.constant("w", rounded(random_tensor({80, 64}, 14, -0.25f, 0.25f), p.dt));
    b.constant("bias", rounded(random_tensor({80}, 15), p.dt));
    n = &b.node("Gemm", {"a", "w", "bias"}, "y");
    n->attrs["transB"] = int_attr(1);
    n->attrs["alpha"] = float_attr(0.5f);
  }
  const std::string node = n->name;
  b.output("y");
  Case c{b.finish(), {}, node};
  if (*p.name)
    for (ir::Node& x : c.g.nodes) x.attrs["kilnrt_precision"] = string_attr(p.name);
  for (const auto& [name, t] : b.feeds) c.feeds[name] = rounded(t, p.dt);
  return c;
}

ir::Node& node_named(ir::Graph& g, const std::string& name) {
  for (ir::Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

std::string rec_key(const std::string& node) { return node + "\t" + bc::kGemmAlgoAttr; }

std::string tactic_of(const ir::Graph& g, const std::string& node) {
  kilnrt::cuda::ContextGuard guard(0);
  bc::CudaPlan plan(g, 0);
  for (const auto& [name, t] : engine::cuda_tactics(plan))
    if (name == node) return t;
  return "";
}

TEST(CudaGemmTactic, AlgoAttributeEncoding) {  // host only: no GPU needed
  cublasLtMatmulAlgo_t a{};
  for (size_t i = 0; i < 8; ++i) a.data[i] = 0x0123456789abcdefull * (i + 1);
  const std::string hex = bc::gemm_algo_to_hex(a);
  EXPECT_EQ(hex.size(), 128u);
  cublasLtMatmulAlgo_t b{};
  ASSERT_TRUE(bc::gemm_algo_from_hex(hex, &b));
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
  std::string dev;
  ASSERT_TRUE(bc::decode_gemm_algo_attr(bc::encode_gemm_algo_attr("NVIDIA X|sm_90|cudnn 9|cublaslt 13", a), &dev, &b));
  EXPECT_EQ(dev, "NVIDIA X|sm_90|cudnn 9|cublaslt 13");
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_FALSE(bc::gemm_algo_from_hex(hex.substr(1), &b)) << "short";
  EXPECT_FALSE(bc::gemm_algo_from_hex(std::string(127, '0') + "g", &b)) << "not hex";
  EXPECT_FALSE(bc::decode_gemm_algo_attr(hex, &dev, &b)) << "no device key";
}

TEST(CudaGemmTactic, StoredAlgorithmKeyIgnoresCudnnVersion) {  // host only
  // Built where torch loaded its own cuDNN, run under the system one: the cuBLASLt choice still applies.
  EXPECT_EQ(bc::gemm_device_part("H100|sm_90|cudnn 9.19.0 (built for CUDA 13.1)|cublaslt 13.1.0"),
            bc::gemm_device_part("H100|sm_90|cudnn 9.14.0 (built for CUDA 13.0)|cublaslt 13.1.0"));
  EXPECT_EQ(bc::gemm_device_part("H100|sm_90|cudnn 9|cublaslt 13"), "H100|sm_90|cublaslt 13");
  EXPECT_NE(bc::gemm_device_part("H100|sm_90|cudnn 9|cublaslt 13.1"),
            bc::gemm_device_part("H100|sm_90|cudnn 9|cublaslt 13.0"));
  EXPECT_NE(bc::gemm_device_part("H100|sm_90|cudnn 9|cublaslt 13"),
            bc::gemm_device_part("A100|sm_80|cudnn 9|cublaslt 13"));
  EXPECT_EQ(bc::gemm_device_part("no cudnn part"), "no cudnn part");
}

// Every candidate of every case, stored as the node's attribute, runs (no fallback) and matches the CPU reference.
TEST(CudaGemmTactic, EveryStoredAlgorithmMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string dev = bc::tuning_device_key(0);
  for (const char* kind :
       {"fused-bias", "fused-gelu", "fused-gelu-tanh", "fused-residual", "matmul", "matmul-batched", "gemm"}) {
    for (const Prec& p : kPrecs) {
      SCOPED_TRACE(std::string(kind) + " " + (*p.name ? p.name : "fp32"));
      Case c = make_case(kind, p);
      std::vector<cublasLtMatmulAlgo_t> cands;
      bc::set_gemm_candidates_observer([&](const std::string& node, const std::vector<cublasLtMatmulAlgo_t>& v) {
        if (node == c.node) cands = v;
      });
      bc::timing_cache_clear();
      const auto rec = tune(c.g);
      bc::set_gemm_candidates_observer({});
      ASSERT_FALSE(cands.empty()) << "nothing listed";
      ASSERT_EQ(rec.count(rec_key(c.node)), 1u) << "the winner is recorded";
      const Tensor want = run_cpu(c.g, c.feeds).at("y");
      const double tol = p.u == 0 ? 5e-5 : 8 * p.u;  // |y| ~ 1, K = 64; 16-bit: output rounding + GELU form
      for (size_t i = 0; i < cands.size(); ++i) {
        SCOPED_TRACE("candidate " + std::to_string(i));
        ir::Graph g = c.g;
        node_named(g, c.node).attrs[bc::kGemmAlgoAttr] = string_attr(bc::encode_gemm_algo_attr(dev, cands[i]));
        const int before = bc::tuning_stats().fallbacks;
        expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, tol, tol);
        EXPECT_EQ(bc::tuning_stats().fallbacks, before) << "a listed algorithm was refused";
      }
      // The recorded winner too, and the plan shows it.
      ir::Graph g = c.g;
      node_named(g, c.node).attrs[bc::kGemmAlgoAttr] = string_attr(rec.at(rec_key(c.node)));
      expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, tol, tol);
      EXPECT_NE(tactic_of(g, c.node).find("|timed-algo"), std::string::npos);
      EXPECT_EQ(tactic_of(c.g, c.node).find("|timed-algo"), std::string::npos) << "no attribute: heuristic";
    }
  }
}

// A stored algorithm from another GPU / library, a malformed one, or one cuBLASLt refuses: the heuristic runs, with a
// warning counted in tuning_stats().fallbacks; the result is still right.
TEST(CudaGemmTactic, RefusedStoredAlgorithmFallsBack) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Prec& p = kPrecs[1];
  Case c = make_case("fused-bias", p);
  std::vector<cublasLtMatmulAlgo_t> cands;
  bc::set_gemm_candidates_observer([&](const std::string&, const std::vector<cublasLtMatmulAlgo_t>& v) { cands = v; });
  bc::timing_cache_clear();
  tune(c.g);
  bc::set_gemm_candidates_observer({});
  ASSERT_FALSE(cands.empty());
  cublasLtMatmulAlgo_t garbage;
  std::memset(&garbage, 0xff, sizeof(garbage));
  const Tensor want = run_cpu(c.g, c.feeds).at("y");
  const std::pair<const char*, std::string> bad[] = {
      {"other GPU", bc::encode_gemm_algo_attr("Some Other GPU|sm_75|cudnn 8|cublaslt 11", cands[0])},
      {"malformed", "not an algorithm"},
      {"refused by cublasLtMatmulAlgoCheck", bc::encode_gemm_algo_attr(bc::tuning_device_key(0), garbage)},
  };
  for (const auto& [what, value] : bad) {
    SCOPED_TRACE(what);
    ir::Graph g = c.g;
    node_named(g, c.node).attrs[bc::kGemmAlgoAttr] = string_attr(value);
    const int before = bc::tuning_stats().fallbacks;
    expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, 8 * p.u, 8 * p.u);
    EXPECT_EQ(bc::tuning_stats().fallbacks, before + 1);
  }
}

// KILNRT_GEMM_CANDIDATES bounds the heuristic's list the tuner times (split-K variants come on top); a count other
// than the default is its own timing-cache entry, so it is timed again rather than served from the default's entry.
TEST(CudaGemmTactic, CandidateCountFollowsEnvironment) {
  KILNRT_SKIP_WITHOUT_GPU();
  EXPECT_EQ(bc::gemm_candidate_count(), bc::kGemmCandidatesDefault);
  const Prec& p = kPrecs[1];
  Case c = make_case("fused-bias", p);
  auto listed = [&](const char* count) {
    EnvVar n("KILNRT_GEMM_CANDIDATES", count);
    EnvVar no_split("KILNRT_GEMM_SPLITK", "0");
    size_t seen = 0;
    int calls = 0;
    bc::set_gemm_candidates_observer([&](const std::string&, const std::vector<cublasLtMatmulAlgo_t>& v) {
      seen = v.size();
      ++calls;
    });
    tune(c.g);
    bc::set_gemm_candidates_observer({});
    EXPECT_EQ(calls, 1) << "KILNRT_GEMM_CANDIDATES=" << count << " must be timed, not a cache hit";
    return seen;
  };
  bc::timing_cache_clear();
  EXPECT_EQ(listed("1"), 1u);
  const size_t many = listed("40");
  EXPECT_GE(many, 1u);
  EXPECT_LE(many, 40u);
  {
    EnvVar bad("KILNRT_GEMM_CANDIDATES", "1000");  // out of range: the default
    EXPECT_EQ(bc::gemm_candidate_count(), bc::kGemmCandidatesDefault);
  }
  expect_tensors_close(run_cuda(c.g, c.feeds).at("y"), run_cpu(c.g, c.feeds).at("y"), 8 * p.u, 8 * p.u);
}

// Identical GEMM problems are timed once: two MatMuls of the same shapes in one plan (one timed, one cache hit), a
// second plan (all hits), and through a KILNRT_TIMING_CACHE file after the in-memory cache is cleared.
TEST(CudaGemmTactic, TimingCacheDedupesProblems) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string file = ::testing::TempDir() + "/kilnrt_gemm_timing_cache.txt";
  std::remove(file.c_str());
  EnvVar cache_file("KILNRT_TIMING_CACHE", file.c_str());
  attntest::Builder b;
  b.input("x", {74, 64});
  b.constant("w1", random_tensor({64, 64}, 21, -0.25f, 0.25f));
  b.constant("w2", random_tensor({64, 64}, 22, -0.25f, 0.25f));
  const std::string n1 = b.node("MatMul", {"x", "w1"}, "h").name;
  const std::string n2 = b.node("MatMul", {"h", "w2"}, "y").name;
  b.output("y");
  ir::Graph g = b.finish();
  for (ir::Node& x : g.nodes) x.attrs["kilnrt_precision"] = string_attr("fp16");
  bc::timing_cache_clear();
  const bc::TuningStats s0 = bc::tuning_stats();
  const auto first = tune(g);
  const bc::TuningStats s1 = bc::tuning_stats();
  EXPECT_EQ(s1.gemm_timed - s0.gemm_timed, 1);
  EXPECT_EQ(s1.gemm_cache_hits - s0.gemm_cache_hits, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first.at(rec_key(n1)), first.at(rec_key(n2))) << "same problem, same algorithm";
  const auto second = tune(g);
  const bc::TuningStats s2 = bc::tuning_stats();
  EXPECT_EQ(s2.gemm_timed, s1.gemm_timed);
  EXPECT_EQ(s2.gemm_cache_hits - s1.gemm_cache_hits, 2);
  EXPECT_EQ(first, second);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("gemm MatMul f16 fp16 [74,64,] [64,64,]"), std::string::npos) << text.str();
  bc::timing_cache_clear();  // the file is read again
  const auto third = tune(g);
  EXPECT_EQ(bc::tuning_stats().gemm_timed, s2.gemm_timed) << "answered by the file";
  EXPECT_EQ(first, third);
  {
    EnvVar off("KILNRT_GEMM_TUNING", "0");
    bc::timing_cache_clear();
    EXPECT_TRUE(tune(g).empty()) << "KILNRT_GEMM_TUNING=0: nothing timed or recorded";
  }
  bc::timing_cache_clear();
  std::remove(file.c_str());
}

// build_engine times the GEMMs and stores the algorithms with the nodes; loading runs them (no fallback) and the
// results match the CPU engine's; KILNRT_GEMM_TUNING=0 stores none.
TEST(CudaGemmTactic, EngineFileKeepsTimedAlgorithms) {
  KILNRT_SKIP_WITHOUT_GPU();
  constexpr int64_t kIn = 64, kHidden = 256, kOut = 32, kBatch = 197;
  const std::string onnx = enginetest::write_model(::testing::TempDir() + "/kilnrt_gemm_tactics_mlp.onnx",
                                                   enginetest::mlp_model(kIn, kHidden, kOut, {"y"}));
  BuildOptions o;
  o.device = "cpu";
  o.profiles = {{InputProfile{"x", {kBatch, kIn}, {kBatch, kIn}, {kBatch, kIn}}}};
  const std::vector<uint8_t> cpu_bytes = build_engine(onnx, o);
  o.device = "cuda";
  o.fp16 = true;
  bc::timing_cache_clear();
  const std::vector<uint8_t> bytes = build_engine(onnx, o);
  const engine::LoadedEngine e = engine::deserialize_engine(bytes.data(), bytes.size(), "gpu");
  int stored = 0;
  for (const ir::Node& n : e.graph.nodes)
    if (n.has_attr(bc::kGemmAlgoAttr)) {
      ++stored;
      std::string dev;
      cublasLtMatmulAlgo_t a{};
      EXPECT_TRUE(bc::decode_gemm_algo_attr(n.attr_string(bc::kGemmAlgoAttr, std::string()), &dev, &a)) << n.name;
      EXPECT_EQ(dev, bc::tuning_device_key(0));
    }
  EXPECT_EQ(stored, 2) << "the two GEMMs of the MLP";
  int shown = 0;
  for (const auto& [node, t] : e.meta.layer_tactics) shown += t.find("|timed-algo") != std::string::npos;
  EXPECT_EQ(shown, stored);
  const Tensor x = enginetest::random_input(kBatch, kIn, 5);
  auto run = [&](const std::vector<uint8_t>& b) {
    auto engine = Engine::from_bytes(b.data(), b.size(), "<memory>", 0);
    return engine->run({{engine->inputs()[0].name, x}}).at("y");
  };
  const int before = bc::tuning_stats().fallbacks;
  EXPECT_LT(enginetest::relative_error(run(bytes), run(cpu_bytes)), 2e-2);
  EXPECT_EQ(bc::tuning_stats().fallbacks, before);
  EnvVar off("KILNRT_GEMM_TUNING", "0");
  const std::vector<uint8_t> plain = build_engine(onnx, o);
  const engine::LoadedEngine ep = engine::deserialize_engine(plain.data(), plain.size(), "gpu");
  for (const ir::Node& n : ep.graph.nodes) EXPECT_FALSE(n.has_attr(bc::kGemmAlgoAttr)) << n.name;
}

}  // namespace
}  // namespace kilnrt::cudatest
