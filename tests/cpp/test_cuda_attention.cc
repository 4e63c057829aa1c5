// com.kilnrt:FusedAttention and com.kilnrt:Gelu on the GPU against the CPU reference: float32, float16 and
// bfloat16 storage (kilnrt_precision as --fp16 / --bf16 set it), with and without mask, fully masked rows (-inf and
// -1e9: uniform, never NaN), head sizes on the tensor-core path (multiples of 16) and off it, partial query / key
// tiles, the exporters' transposed layouts; the fused graph against the unfused CPU graph; and the dynamo encoder
// fixture through whole engines (direct run, graph capture, replay). Skips with a message without a GPU.
#include <cmath>
#include <limits>

#include "attention_test_util.h"
#include "sdpa_test_util.h"
#include "cuda_backend_test_util.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_gelu.h"

namespace kilnrt::cudatest {
namespace {

using attntest::random_tensor;

struct Prec {
  const char* name;  // "" = float32 (no attribute)
  DType dt;
  double u;  // unit roundoff of the storage dtype
};
const Prec kPrecs[] = {
    {"", DType::kFloat32, 0.0}, {"fp16", DType::kFloat16, 1.0 / 2048}, {"bf16", DType::kBFloat16, 1.0 / 256}};

float round_to(float v, DType dt) {
  if (dt == DType::kFloat16) return half_to_float(float_to_half(v));
  if (dt == DType::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}
Tensor rounded(Tensor t, DType dt) {
  Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = round_to(r.data<float>()[i], dt);
  return r;
}

void set_precision(ir::Graph& g, const Prec& p) {
  if (!*p.name) return;
  for (ir::Node& n : g.nodes) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = p.name;
    n.attrs["kilnrt_precision"] = a;
  }
}

// Tolerances: float32 1e-5-ish (different summation order); 16-bit: P and O are rounded once each, so a few units
// of roundoff times the output scale (|V| <= 1).
double atol_for(const Prec& p) { return p.u == 0.0 ? 2e-5 : 6.0 * p.u; }
double rtol_for(const Prec& p) { return p.u == 0.0 ? 1e-4 : 8.0 * p.u; }

struct AttnCase {
  const char* label;
  Shape q, k, v;  // physical input shapes
  std::vector<int64_t> q_perm, k_perm, v_perm, out_perm;
  Shape mask;           // empty: no mask
  int masked_rows = 0;  // rows of the mask set to `mask_value` everywhere
  float mask_value = -std::numeric_limits<float>::infinity();
  bool zero_masked_rows = false;  // the attribute (dynamo's NaN guard): fully masked rows are zeros
};

ir::Attribute ints(const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = v;
  return a;
}

void run_case(const AttnCase& c, const Prec& p) {
  SCOPED_TRACE(std::string(c.label) + " " + (*p.name ? p.name : "fp32"));
  attntest::Builder b;
  b.input("q", c.q);
  b.input("k", c.k);
  b.input("v", c.v);
  std::vector<std::string> ins = {"q", "k", "v"};
  if (!c.mask.empty()) {
    b.input("mask", c.mask, -2.f, 0.f);
    Tensor& m = b.feeds["mask"];
    const int64_t row = c.mask.back();
    for (int64_t i = 0; i < c.masked_rows * row && i < m.numel(); ++i) m.data<float>()[i] = c.mask_value;
    // A partly masked row too: every other key of the next row.
    for (int64_t j = 0; j < row && (c.masked_rows + 1) * row <= m.numel(); j += 2)
      m.data<float>()[c.masked_rows * row + j] = c.mask_value;
    ins.push_back("mask");
  }
  ir::Node& n = b.node("FusedAttention", ins, "y");
  n.domain = "com.kilnrt";
  n.attrs["scale"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["scale"].f = 0.3f;
  if (!c.q_perm.empty()) n.attrs["q_perm"] = ints(c.q_perm);
  if (!c.k_perm.empty()) n.attrs["k_perm"] = ints(c.k_perm);
  if (!c.v_perm.empty()) n.attrs["v_perm"] = ints(c.v_perm);
  if (!c.out_perm.empty()) n.attrs["out_perm"] = ints(c.out_perm);
  if (c.zero_masked_rows) {
    n.attrs["zero_masked_rows"].kind = ir::Attribute::Kind::kInt;
    n.attrs["zero_masked_rows"].i = 1;
  }
  b.g.opsets["com.kilnrt"] = 1;
  b.output("y");
  ir::Graph g = b.finish();
  set_precision(g, p);
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : b.feeds) feeds[name] = rounded(t, p.dt);
  const auto want = run_cpu(g, feeds);
  const auto got = run_cuda(g, feeds);
  const Tensor& y = got.at("y");
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_FALSE(std::isnan(y.data<float>()[i])) << "NaN at " << i;
  expect_tensors_close(y, want.at("y"), atol_for(p), rtol_for(p));
  if (c.zero_masked_rows && c.masked_rows > 0) {  // the first masked query rows of (b0, b1) = (0, 0) are zeros
    int64_t nonzero = 0;
    for (int64_t i = 0; i < c.masked_rows * c.v.back(); ++i) nonzero += y.data<float>()[i] != 0.f;
    EXPECT_EQ(nonzero, 0) << "fully masked rows must be zeros";
  }
}

const AttnCase kCases[] = {
    // BERT layout: [B, S, H, D] heads read in place, output [B, S, H, D]; 77 queries = 2 tiles, 77 keys.
    {"bert d64 mask",
     {2, 77, 3, 64},
     {2, 77, 3, 64},
     {2, 77, 3, 64},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {2, 1, 1, 77}},
    {"bert d64 no mask",
     {2, 77, 3, 64},
     {2, 77, 3, 64},
     {2, 77, 3, 64},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {0, 2, 1, 3},
     {}},
    // Fully masked query rows (-inf and -1e9) with a per-query mask.
    {"masked rows -inf", {1, 2, 40, 32}, {1, 2, 70, 32}, {1, 2, 70, 32}, {}, {}, {}, {}, {40, 70}, 3},
    {"masked rows -1e9", {1, 2, 40, 32}, {1, 2, 70, 32}, {1, 2, 70, 32}, {}, {}, {}, {}, {40, 70}, 3, -1e9f},
    // zero_masked_rows (dynamo's NaN guard): -inf rows are zeros, on the tensor-core path (D = 32) and off it (D = 40).
    {"masked rows zero",
     {1, 2, 40, 32},
     {1, 2, 70, 32},
     {1, 2, 70, 32},
     {},
     {},
     {},
     {},
     {40, 70},
     3,
     -std::numeric_limits<float>::infinity(),
     true},
    {"masked rows zero d40",
     {1, 2, 40, 40},
     {1, 2, 70, 40},
     {1, 2, 70, 24},
     {},
     {},
     {},
     {},
     {40, 70},
     3,
     -std::numeric_limits<float>::infinity(),
     true},
    // ViT layout: [S, B*H, D], rank 3; 197 tokens (partial last tiles).
    {"vit d64", {197, 4, 64}, {197, 4, 64}, {197, 4, 64}, {1, 0, 2}, {1, 0, 2}, {1, 0, 2}, {1, 0, 2}, {}},
    // Off the tensor-core path: D = 40 (not a multiple of 16), Dv = 24; D = 128 (the largest head); Sq = 1.
    {"d40 dv24", {3, 33, 40}, {3, 90, 40}, {3, 90, 24}, {}, {}, {}, {}, {33, 90}},
    {"d128", {2, 65, 128}, {2, 130, 128}, {2, 130, 128}, {}, {}, {}, {}, {}},
    {"one query", {4, 1, 64}, {4, 300, 64}, {4, 300, 64}, {}, {}, {}, {}, {4, 1, 300}},
};

}  // namespace

TEST(CudaAttention, FusedAttentionMatchesCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs)
    for (const AttnCase& c : kCases) run_case(c, p);
}

TEST(CudaAttention, FusedGraphMatchesUnfusedCpuGraph) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(*p.name ? p.name : "fp32");
    attntest::Builder b;
    const ir::Graph unfused = attntest::bert_block(b, 2, 128, 4, 64, true, -10000.f, 0.f);
    ir::Graph fused = unfused;
    ASSERT_EQ(passes::fuse_attention(fused), 1u);
    passes::infer_shapes(fused);
    set_precision(fused, p);
    std::map<std::string, Tensor> feeds;
    for (const auto& [name, t] : b.feeds) feeds[name] = rounded(t, p.dt);
    expect_tensors_close(run_cuda(fused, feeds).at("y"), run_cpu(unfused, feeds).at("y"), atol_for(p), rtol_for(p));
  }
}

TEST(CudaAttention, DynamoSdpaAndMhaBlocksFusedMatchUnfusedCpu) {
  // transformers' BertModel (sdpa: boolean mask -> -inf, NaN guard) and torchvision ViT's MultiheadAttention (packed
  // projection selects as Slices, head split read in place from their [S, B, E] output), exported by dynamo, fused, on
  // the GPU in fp32 / fp16 / bf16, against the unfused graph on the CPU. In float32 batch entry 1 is all padding: its
  // rows are zeros (the guard). 16-bit engines clamp constants to the finite range (cuda_plan.cc: the mask's -inf
  // becomes the lowest finite value, so no row is ever fully -inf and the guard never fires, fused or not), so there
  // every entry keeps some unmasked key; the kernel's zero rows in 16 bits are checked with a -inf mask input ("masked
  // rows zero").
  KILNRT_SKIP_WITHOUT_GPU();
  // kind 1: BERT's mask as transformers 4.5x writes it, And(all-true [1, 1, S, 1], key mask), read as a key mask.
  for (int kind : {0, 1, 2})
    for (const Prec& p : kPrecs) {
      const bool bert = kind < 2;
      SCOPED_TRACE(std::string(kind == 0   ? "bert sdpa "
                               : kind == 1 ? "bert sdpa query-and "
                                           : "vit mha ") +
                   (*p.name ? p.name : "fp32"));
      attntest::Builder b;
      const bool padded = bert && p.u == 0.0;
      const ir::Graph unfused = bert ? attntest::sdpa_dynamo_block(
                                           b, 3, 128, 4, 64, padded ? std::vector<int64_t>{1} : std::vector<int64_t>{},
                                           /*query_and=*/kind == 1)
                                     : attntest::mha_dynamo_block(b, 2, 197, 4, 64, /*packed=*/true);
      ir::Graph fused = unfused;
      ASSERT_EQ(passes::fuse_attention(fused), 1u);
      passes::infer_shapes(fused);
      set_precision(fused, p);
      std::map<std::string, Tensor> feeds;
      for (const auto& [name, t] : b.feeds) feeds[name] = rounded(t, p.dt);
      const Tensor y = run_cuda(fused, feeds).at("y");
      int64_t nans = 0;
      for (int64_t i = 0; i < y.numel(); ++i) nans += std::isnan(y.data<float>()[i]);
      EXPECT_EQ(nans, 0);
      expect_tensors_close(y, run_cpu(unfused, feeds).at("y"), atol_for(p), rtol_for(p));
      if (padded) {
        const int64_t row = 128 * 256;  // batch entry 1: [S, H*D]
        int64_t nonzero = 0;
        for (int64_t i = 0; i < row; ++i) nonzero += y.data<float>()[row + i] != 0.f;
        EXPECT_EQ(nonzero, 0) << "the padded entry's rows must be zeros";
      }
    }
}

TEST(CudaAttention, GeluFusedMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* approx : {"none", "tanh"}) {
    for (const Prec& p : kPrecs) {
      SCOPED_TRACE(std::string(approx) + " " + (*p.name ? p.name : "fp32"));
      attntest::Builder b;
      b.input("x", {5, 301}, -6.f, 6.f);
      ir::Node& n = b.node("Gelu", {"x"}, "y");
      n.domain = "com.kilnrt";
      n.attrs["approximate"].kind = ir::Attribute::Kind::kString;
      n.attrs["approximate"].s = approx;
      b.g.opsets["com.kilnrt"] = 1;
      b.output("y");
      ir::Graph g = b.finish();
      set_precision(g, p);
      std::map<std::string, Tensor> feeds = {{"x", rounded(b.feeds["x"], p.dt)}};
      expect_tensors_close(run_cuda(g, feeds).at("y"), run_cpu(g, feeds).at("y"), p.u == 0 ? 1e-5 : 4 * p.u,
                           p.u == 0 ? 1e-5 : 4 * p.u);
    }
  }
}

TEST(CudaAttention, FusedMatMulEpiloguesMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* act : {"none", "gelu", "gelu-tanh"}) {
    for (bool trans_b : {false, true}) {
      for (const Prec& p : kPrecs) {
        SCOPED_TRACE(std::string(act) + (trans_b ? " transB " : " ") + (*p.name ? p.name : "fp32"));
        attntest::Builder b;
        b.input("a", {3, 37, 96}, -1.f, 1.f);
        b.constant("w", rounded(random_tensor(trans_b ? Shape{80, 96} : Shape{96, 80}, 11, -0.2f, 0.2f), p.dt));
        b.constant("bias", rounded(random_tensor({80}, 12), p.dt));
        ir::Node& n = b.node("FusedMatMul", {"a", "w", "bias"}, "y");
        n.domain = "com.kilnrt";
        n.attrs["trans_b"].kind = ir::Attribute::Kind::kInt;
        n.attrs["trans_b"].i = trans_b ? 1 : 0;
        n.attrs["activation"].kind = n.attrs["approximate"].kind = ir::Attribute::Kind::kString;
        n.attrs["activation"].s = std::string(act) == "none" ? "none" : "gelu";
        n.attrs["approximate"].s = std::string(act) == "gelu-tanh" ? "tanh" : "none";
        b.g.opsets["com.kilnrt"] = 1;
        b.output("y");
        ir::Graph g = b.finish();
        set_precision(g, p);
        std::map<std::string, Tensor> feeds = {{"a", rounded(b.feeds["a"], p.dt)}};
        // |y| ~ 1; K = 96 products; 16-bit: one output rounding + the erf/tanh GELU difference (< 5e-4).
        const double tol = p.u == 0 ? 2e-5 : 8 * p.u;
        expect_tensors_close(run_cuda(g, feeds).at("y"), run_cpu(g, feeds).at("y"), tol, tol);
      }
    }
  }
}

TEST(CudaAttention, FusedMatMulResidualMatchesCpu) {
  // The skip connection as cuBLASLt's C operand (beta = 1), with and without bias, in three precisions.
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool bias : {true, false})
    for (const Prec& p : kPrecs) {
      SCOPED_TRACE(std::string(bias ? "bias " : "no bias ") + (*p.name ? p.name : "fp32"));
      attntest::Builder b;
      b.input("a", {3, 37, 96}, -1.f, 1.f);
      b.input("res", {3, 37, 80}, -1.f, 1.f);
      b.constant("w", rounded(random_tensor({96, 80}, 11, -0.2f, 0.2f), p.dt));
      b.constant("bias", rounded(random_tensor({80}, 12), p.dt));
      ir::Node& n = b.node("FusedMatMul", {"a", "w", bias ? "bias" : "", "res"}, "y");
      n.domain = "com.kilnrt";
      b.g.opsets["com.kilnrt"] = 1;
      b.output("y");
      ir::Graph g = b.finish();
      set_precision(g, p);
      std::map<std::string, Tensor> feeds = {{"a", rounded(b.feeds["a"], p.dt)},
                                             {"res", rounded(b.feeds["res"], p.dt)}};
      const double tol = p.u == 0 ? 2e-5 : 8 * p.u;
      const Tensor y = run_cuda(g, feeds).at("y");
      expect_tensors_close(y, run_cpu(g, feeds).at("y"), tol, tol);
      // The residual really is added: the result differs from the GEMM (+ bias) alone by |res| ~ 0.5 on average.
      ir::Graph plain = g;
      plain.nodes[0].inputs.resize(bias ? 3 : 2);
      plain.nodes[0].attrs["activation"].kind = ir::Attribute::Kind::kString;
      plain.nodes[0].attrs["activation"].s = "none";
      EXPECT_GT(attntest::max_rel_diff(y, run_cpu(plain, feeds).at("y")), 0.1);
    }
}

TEST(CudaAttention, FusedLayerNormMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    for (int affine = 0; affine < 2; ++affine) {
      SCOPED_TRACE(std::string(*p.name ? p.name : "fp32") + (affine ? " affine" : ""));
      attntest::Builder b;
      b.input("x", {7, 3, 768}, -2.f, 3.f);
      std::vector<std::string> ins = {"x"};
      if (affine) {
        ins.push_back(b.constant("g", rounded(random_tensor({768}, 31, 0.5f, 1.5f), p.dt)));
        ins.push_back(b.constant("bb", rounded(random_tensor({768}, 32), p.dt)));
      }
      ir::Node& n = b.node("LayerNormalization", ins, "y");
      n.domain = "com.kilnrt";
      n.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
      n.attrs["epsilon"].f = 1e-5f;
      b.g.opsets["com.kilnrt"] = 1;
      b.output("y");
      ir::Graph g = b.finish();
      set_precision(g, p);
      std::map<std::string, Tensor> feeds = {{"x", rounded(b.feeds["x"], p.dt)}};
      const double tol = p.u == 0 ? 2e-5 : 8 * p.u;
      expect_tensors_close(run_cuda(g, feeds).at("y"), run_cpu(g, feeds).at("y"), tol, tol);
    }
  }
}

TEST(CudaAttention, EncoderFixtureEnginesDirectCaptureReplay) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string dir = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/";
  const Tensor x = load_npy(dir + "transformer_encoder_layer.input.npy");
  const Tensor want = load_npy(dir + "transformer_encoder_layer.expected.npy");
  for (const char* prec : {"fp32", "fp16", "bf16"}) {
    SCOPED_TRACE(prec);
    BuildOptions opt;
    opt.device = "cuda";
    opt.fp16 = std::string(prec) == "fp16";
    opt.bf16 = std::string(prec) == "bf16";
    const std::vector<uint8_t> bytes = build_engine(dir + "transformer_encoder_layer.onnx", opt);
    auto engine = Engine::from_bytes(bytes.data(), bytes.size());
    bool fused = false;
    for (const LayerInfo& l : engine->layers()) fused |= l.tactic.find("fused-attention") != std::string::npos;
    // float32 CUDA engines keep MatMul + Softmax (faster there than the fused kernel's float32 path).
    EXPECT_EQ(fused, std::string(prec) != "fp32")
        << "the encoder's attention runs as one fused layer in 16-bit engines";
    auto ctx = engine->create_context();
    const double tol = std::string(prec) == "fp32" ? 1e-4 : std::string(prec) == "fp16" ? 2e-2 : 8e-2;
    for (int call = 0; call < 3; ++call) {  // direct, graph capture, graph replay
      const Tensor y = ctx->run({{"x", x}}).at("y");
      EXPECT_LE(attntest::max_rel_diff(y, want), tol) << "call " << call << " (" << ctx->last_execution_mode() << ")";
    }
  }
}

}  // namespace kilnrt::cudatest
