// cuDNN's fused SDPA as a tactic of FusedAttention (cudnn_attention.h): the packed Q | K | V
// layouts of BERT ([B, S, 3H, D], additive key mask [B, 1, 1, S], zero_masked_rows) and ViT ([S, B, 3H, D], no mask)
// read in place by cuDNN, fp16 and bf16, b = 2..4, against the CPU reference; the choice recorded at build (forced,
// and timed against the kernel) and run through the stored attribute; fully masked rows are zeros; what cuDNN must
// not take (head size 80, float32, a mask without zero_masked_rows, a stored choice from another GPU,
// KILNRT_CUDNN_ATTENTION=0) runs the kernel with its result. Host-only rules run everywhere; GPU tests skip with a
// message without a GPU.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "attention_test_util.h"
#include "ops/cuda/tactic_timing.h"
#include "ops/nn/fused_attention/cuda/cudnn_attention.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "tuning_test_util.h"

namespace kilnrt::cudatest {
namespace {

namespace bc = kilnrt::backends::cuda;
namespace k = kilnrt::cuda::kernels;
namespace tc = kilnrt::testing_conv;

struct EnvVar {  // sets (or, with nullptr, unsets) a variable for one scope
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) {
    if (v)
      setenv(n, v, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() { unsetenv(name.c_str()); }
};

struct Layout {
  int64_t b, s, h, d;
  bool vit;   // [S, B, 3H, D] (torchvision's MHA), else [B, S, 3H, D] (BERT)
  bool mask;  // additive [B, 1, 1, S]
  bool zero_masked_rows;
};

std::string label(const Layout& c) {
  return std::string(c.vit ? "vit" : "bert") + " b" + std::to_string(c.b) + " s" + std::to_string(c.s) + " h" +
         std::to_string(c.h) + " d" + std::to_string(c.d) + (c.mask ? " mask" : "") +
         (c.zero_masked_rows ? " zmr" : "");
}

// FusedAttention(p, p, p [, mask]) named "attention" reading Q, K, V as parts [0, H), [H, 2H), [2H, 3H) of p along
// axis 2 (attntest::packed_attention_graph).
ir::Graph packed_graph(const Layout& c, const char* precision) {
  ir::Graph g = attntest::packed_attention_graph("cudnn_attention", "attention", c.b, c.s, c.h, c.d, c.vit, c.mask);
  ir::Node& n = g.nodes[0];
  if (c.zero_masked_rows) {
    n.attrs["zero_masked_rows"].kind = ir::Attribute::Kind::kInt;
    n.attrs["zero_masked_rows"].i = 1;
  }
  if (*precision) n.attrs["kilnrt_precision"] = tc::string_attr(precision);
  passes::infer_shapes(g);
  return g;
}

std::map<std::string, Tensor> feeds_for(const Layout& c, DType storage) {
  std::map<std::string, Tensor> f;
  const Shape ps = c.vit ? Shape{c.s, c.b, 3 * c.h, c.d} : Shape{c.b, c.s, 3 * c.h, c.d};
  f["p"] = passtest::random_tensor(ps, 21, -1.5f, 1.5f);
  if (c.mask) f["mask"] = passtest::random_tensor({c.b, 1, 1, c.s}, 22, -4.f, 0.f);
  if (storage != DType::kFloat32)
    for (auto& [name, t] : f) t = rounded_to_16bit(t, storage);
  return f;
}

const std::string kRecKey = std::string("attention\t") + bc::kAttentionTacticAttr;

std::string here() { return bc::attention_device_part(bc::tuning_device_key(0)); }

ir::Graph with_choice(ir::Graph g, const std::string& value) {
  g.nodes[0].attrs[bc::kAttentionTacticAttr] = tc::string_attr(value);
  return g;
}

// "<here>#cudnn" (configuration 0) or "<here>#cudnn:<i>".
bool is_cudnn_choice(const std::string& v) {
  const std::string p = here() + "#cudnn";
  return v == p || (v.rfind(p + ":", 0) == 0 && v.size() > p.size() + 1);
}

const Layout kSupported[] = {
    {2, 77, 2, 64, false, true, true},    // BERT-like, partial tiles
    {3, 128, 2, 64, false, true, true},   // BERT seq 128
    {4, 197, 2, 64, true, false, false},  // ViT seq 197
    {2, 50, 2, 128, true, false, false},  // head size 128
};

}  // namespace

TEST(CudnnAttentionRules, PrecheckAndDeviceKey) {  // host only
  k::AttentionArgs a;
  a.dt = 1;
  a.b0 = 2, a.b1 = 12, a.sq = a.sk = 128, a.d = a.dv = 64;
  const int64_t E = 768;
  for (int64_t* s : {a.qs, a.ks, a.vs}) {
    s[0] = 128 * 3 * E, s[1] = 64, s[2] = 3 * E, s[3] = 1;
  }
  a.os[0] = 128 * E, a.os[1] = 64, a.os[2] = E, a.os[3] = 1;
  EXPECT_EQ(bc::sdpa_precheck(a, false), "");
  k::AttentionArgs f = a;
  f.dt = 0;
  EXPECT_NE(bc::sdpa_precheck(f, false), "") << "float32";
  f = a;
  f.d = f.dv = 80;
  EXPECT_NE(bc::sdpa_precheck(f, false), "") << "head size 80";
  f = a;
  f.dv = 128;
  EXPECT_NE(bc::sdpa_precheck(f, false), "") << "D != Dv";
  f = a;
  f.qs[3] = 2;
  EXPECT_NE(bc::sdpa_precheck(f, false), "") << "strided head rows";
  f = a;
  int dummy = 0;
  f.mask = &dummy;
  f.ms[0] = 128, f.ms[3] = 1;
  EXPECT_NE(bc::sdpa_precheck(f, false), "") << "a mask needs zero_masked_rows";
  EXPECT_EQ(bc::sdpa_precheck(f, true), "");
  f.ms[3] = 2;
  EXPECT_NE(bc::sdpa_precheck(f, true), "") << "mask key stride";
  EXPECT_EQ(bc::attention_device_part("NVIDIA H100 80GB HBM3|sm_90|cudnn 9.14.0|cublaslt 13.1.0"),
            "NVIDIA H100 80GB HBM3|sm_90");
  EXPECT_EQ(bc::sdpa_problem_key(a), bc::sdpa_problem_key(a));
  k::AttentionArgs other = a;
  other.scale = 0.5f;
  EXPECT_NE(bc::sdpa_problem_key(a), bc::sdpa_problem_key(other));
}

// Forced: cuDNN must plan, run and be captured for every supported layout (the recorded choice says so), and the
// engine running the stored choice matches the CPU reference with cuDNN's calls counted.
TEST(CudaCudnnAttention, ForcedChoiceMatchesCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Precision16& p : kPrecisions16)
    for (const Layout& c : kSupported) {
      SCOPED_TRACE(label(c) + " " + p.name);
      const ir::Graph g = packed_graph(c, p.name);
      const auto feeds = feeds_for(c, p.dt);
      std::map<std::string, std::string> rec;
      {
        EnvVar force("KILNRT_CUDNN_ATTENTION", "force");
        bc::timing_cache_clear();
        rec = tune(g);
      }
      ASSERT_EQ(rec.count(kRecKey), 1u) << "nothing recorded";
      ASSERT_TRUE(is_cudnn_choice(rec[kRecKey]))
          << rec[kRecKey] << ": cuDNN did not plan / run / capture: " << bc::cudnn_attention_last_report();
      const int64_t runs = bc::cudnn_attention_runs();
      const int fallbacks = bc::tuning_stats().fallbacks;
      const Tensor y = run_cuda(with_choice(g, rec[kRecKey]), feeds).at("y");
      EXPECT_GT(bc::cudnn_attention_runs(), runs) << "cuDNN did not run";
      EXPECT_EQ(bc::tuning_stats().fallbacks, fallbacks);
      int64_t nans = 0;
      for (int64_t i = 0; i < y.numel(); ++i) nans += std::isnan(y.data<float>()[i]);
      EXPECT_EQ(nans, 0);
      expect_tensors_close(y, run_cpu(g, feeds).at("y"), 16 * p.u, 16 * p.u);
    }
}

// Timed (the default): the winner of kernel vs cuDNN is recorded, and the engine running it matches the CPU.
TEST(CudaCudnnAttention, TimedChoiceIsRecordedAndMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar timed("KILNRT_CUDNN_ATTENTION", nullptr);
  for (const Layout& c : {Layout{4, 128, 12, 64, false, true, true}, Layout{4, 197, 12, 64, true, false, false}}) {
    SCOPED_TRACE(label(c));
    const ir::Graph g = packed_graph(c, "fp16");
    const auto feeds = feeds_for(c, DType::kFloat16);
    bc::timing_cache_clear();
    const auto rec = tune(g);
    ASSERT_EQ(rec.count(kRecKey), 1u) << "nothing recorded";
    const std::string& v = rec.at(kRecKey);
    EXPECT_TRUE(is_cudnn_choice(v) || v == here() + "#kernel") << v;
    std::cout << "[ timed    ] " << label(c) << ": " << v.substr(v.rfind('#') + 1) << std::endl;
    expect_tensors_close(run_cuda(with_choice(g, v), feeds).at("y"), run_cpu(g, feeds).at("y"), 16.0 / 2048,
                         16.0 / 2048);
  }
}

// BERT's padding: a batch entry whose keys are all -inf. With zero_masked_rows = 1 its rows must be zeros (the CPU
// reference's and the kernel's convention), never NaN, under cuDNN too.
TEST(CudaCudnnAttention, FullyMaskedRowsAreZeros) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Layout c{3, 128, 2, 64, false, true, true};
  const ir::Graph g = with_choice(packed_graph(c, "fp16"), here() + "#cudnn");
  auto feeds = feeds_for(c, DType::kFloat16);
  float* m = feeds["mask"].data<float>();
  for (int64_t j = 0; j < c.s; ++j) m[1 * c.s + j] = -std::numeric_limits<float>::infinity();
  const int64_t runs = bc::cudnn_attention_runs();
  const Tensor y = run_cuda(g, feeds).at("y");
  EXPECT_GT(bc::cudnn_attention_runs(), runs) << "cuDNN did not run: " << bc::cudnn_attention_last_report();
  const int64_t row = c.s * c.h * c.d;  // batch entry 1 of y [B, S, H, D]
  int64_t nonzero = 0, nans = 0;
  for (int64_t i = 0; i < row; ++i) {
    nonzero += y.data<float>()[row + i] != 0.f;
    nans += std::isnan(y.data<float>()[row + i]);
  }
  EXPECT_EQ(nans, 0);
  EXPECT_EQ(nonzero, 0) << "the fully masked entry's rows must be zeros";
  expect_tensors_close(y, run_cpu(g, feeds).at("y"), 16.0 / 2048, 16.0 / 2048);
}

// What cuDNN must not take runs the kernel: forced timing records the kernel (or nothing for float32), a stored
// cuDNN choice falls back without running cuDNN, and the result is the reference's.
TEST(CudaCudnnAttention, UnsupportedCasesRunTheKernel) {
  KILNRT_SKIP_WITHOUT_GPU();
  struct Case {
    Layout c;
    const char* prec;
    DType dt;
    double tol;
  };
  const Case cases[] = {
      {{2, 77, 2, 80, false, true, true}, "fp16", DType::kFloat16, 16.0 / 2048},   // head size 80
      {{2, 77, 2, 64, false, true, true}, "", DType::kFloat32, 1e-4},              // float32
      {{2, 77, 2, 64, false, true, false}, "fp16", DType::kFloat16, 16.0 / 2048},  // mask, uniform masked rows
  };
  for (const Case& x : cases) {
    SCOPED_TRACE(label(x.c) + " " + (*x.prec ? x.prec : "fp32"));
    const ir::Graph g = packed_graph(x.c, x.prec);
    const auto feeds = feeds_for(x.c, x.dt);
    std::map<std::string, std::string> rec;
    {
      EnvVar force("KILNRT_CUDNN_ATTENTION", "force");
      bc::timing_cache_clear();
      rec = tune(g);
    }
    if (x.dt == DType::kFloat32)
      EXPECT_EQ(rec.count(kRecKey), 0u) << "float32 is not timed";
    else
      EXPECT_EQ(rec[kRecKey], here() + "#kernel");
    const int64_t runs = bc::cudnn_attention_runs();
    const Tensor y = run_cuda(with_choice(g, here() + "#cudnn"), feeds).at("y");
    EXPECT_EQ(bc::cudnn_attention_runs(), runs) << "cuDNN ran where it must not";
    expect_tensors_close(y, run_cpu(g, feeds).at("y"), x.tol, x.tol);
  }
}

// A stored cuDNN choice from another GPU, or with KILNRT_CUDNN_ATTENTION=0, runs the kernel (the first counted as a
// fallback).
TEST(CudaCudnnAttention, StoredChoiceOffSwitchAndOtherGpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Layout c{2, 128, 2, 64, false, true, true};
  const ir::Graph g = packed_graph(c, "fp16");
  const auto feeds = feeds_for(c, DType::kFloat16);
  const Tensor want = run_cpu(g, feeds).at("y");
  const double tol = 16.0 / 2048;
  {
    const int fallbacks = bc::tuning_stats().fallbacks;
    const int64_t runs = bc::cudnn_attention_runs();
    expect_tensors_close(run_cuda(with_choice(g, "Another GPU|sm_80#cudnn"), feeds).at("y"), want, tol, tol);
    EXPECT_EQ(bc::cudnn_attention_runs(), runs);
    EXPECT_EQ(bc::tuning_stats().fallbacks, fallbacks + 1);
  }
  {
    EnvVar off("KILNRT_CUDNN_ATTENTION", "0");
    const int64_t runs = bc::cudnn_attention_runs();
    expect_tensors_close(run_cuda(with_choice(g, here() + "#cudnn"), feeds).at("y"), want, tol, tol);
    EXPECT_EQ(bc::cudnn_attention_runs(), runs);
  }
  {
    const int fallbacks = bc::tuning_stats().fallbacks;
    expect_tensors_close(run_cuda(with_choice(g, "garbage"), feeds).at("y"), want, tol, tol);
    expect_tensors_close(run_cuda(with_choice(g, here() + "#cudnn:x"), feeds).at("y"), want, tol, tol);
    EXPECT_EQ(bc::tuning_stats().fallbacks, fallbacks + 2) << "a malformed attribute is a fallback";
  }
}

// The zoo's shapes at batch 32 (BERT seq 128 with its mask, ViT seq 197), 12 heads of 64: cuDNN plans at least one
// engine configuration; what it planned and refused is printed for the results file.
TEST(CudaCudnnAttention, ZooShapesPlanAndReport) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Layout& c : {Layout{32, 128, 12, 64, false, true, true}, Layout{32, 197, 12, 64, true, false, false}}) {
    SCOPED_TRACE(label(c));
    std::map<std::string, std::string> rec;
    {
      EnvVar force("KILNRT_CUDNN_ATTENTION", "force");
      bc::timing_cache_clear();
      rec = tune(packed_graph(c, "fp16"));
    }
    std::cout << "[ report   ] " << label(c) << " -> " << rec[kRecKey] << "\n"
              << bc::cudnn_attention_last_report() << std::endl;
    EXPECT_TRUE(is_cudnn_choice(rec[kRecKey])) << rec[kRecKey];
  }
}

}  // namespace kilnrt::cudatest
