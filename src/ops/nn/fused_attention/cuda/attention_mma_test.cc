// The FlashAttention-2-style attention kernel (attention_mma.cu) against the CPU reference of
// com.kilnrt:FusedAttention in float16 and bfloat16 storage: head sizes 32 / 64 / 128, Sq != Sk, partial tiles (197,
// 77, 1 tokens), broadcast key masks and full [B, H, Sq, Sk] masks, fully masked rows (uniform, or zeros with
// zero_masked_rows), the exporters' strided head layouts read in place, a strided output; plus cases that must fall
// back to the older kernels (K with a non-unit element stride, D != Dv, D = 80). Each case also asserts which kernel
// attention() picks for its strides. Every GPU case runs under every variant of the kernel (the first one, "v1",
// and each configuration of the second, attention_fa2.cuh: m-tiles per warp, key split across warps with the final
// merge, batch-1 grids, S = 197 tails), forced through KILNRT_ATTENTION_KERNEL; KILNRT_ATTENTION_TEST_VARIANTS
// (comma-separated names) narrows the list, e.g. under compute-sanitizer. GPU cases skip with a message without a
// GPU; the dispatch checks run everywhere.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "attention_test_util.h"
#include "ops/nn/fused_attention/cuda/attention_mma.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/fused_attention/fused_attention.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Prec {
  const char* name;
  DType dt;
  double u;  // unit roundoff
};
const Prec kPrecs[] = {{"fp16", DType::kFloat16, 1.0 / 2048}, {"bf16", DType::kBFloat16, 1.0 / 256}};

float round_to(float v, DType dt) {
  return dt == DType::kFloat16 ? half_to_float(float_to_half(v)) : bfloat16_to_float(float_to_bfloat16(v));
}

struct Case {
  const char* label;
  Shape q, k, v;  // physical shapes
  std::vector<int64_t> q_perm, k_perm, v_perm, out_perm;
  Shape mask;           // empty: none
  bool mma;             // whether attention() must take the mma kernel for these strides
  int masked_rows = 0;  // leading mask rows set to mask_value (whole flat rows of the mask's last axis)
  float mask_value = -kInf;
  bool zero_masked_rows = false;
};

ir::Attribute ints(const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = v;
  return a;
}

struct Built {
  attntest::Builder b;
  ir::Graph g;
};

// One FusedAttention node (scale 0.3, the case's perms / mask) with random inputs; V in [-1, 1], mask in [-2, 0].
void build(const Case& c, Built& out) {
  attntest::Builder& b = out.b;
  b.input("q", c.q);
  b.input("k", c.k);
  b.input("v", c.v);
  std::vector<std::string> ins = {"q", "k", "v"};
  if (!c.mask.empty()) {
    b.input("mask", c.mask, -2.f, 0.f);
    Tensor& m = b.feeds["mask"];
    const int64_t row = c.mask.back();
    for (int64_t i = 0; i < c.masked_rows * row && i < m.numel(); ++i) m.data<float>()[i] = c.mask_value;
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
  out.g = b.finish();
}

// The kernel arguments the CUDA layer passes for this node (16-byte aligned stand-in pointers).
k::AttentionArgs args_for(const Case& c, const ir::Graph& g, int dt) {
  const ir::Node& n = g.nodes.at(0);
  const ops::nn::AttentionGeometry geo =
      ops::nn::attention_geometry(n, c.q, c.k, c.v, c.mask.empty() ? nullptr : &c.mask);
  k::AttentionArgs a;
  a.dt = dt;
  alignas(16) static unsigned char dummy[64];
  a.q = a.k = a.v = a.o = dummy;
  a.mask = c.mask.empty() ? nullptr : dummy;
  a.b0 = geo.b0;
  a.b1 = geo.b1;
  a.sq = geo.sq;
  a.sk = geo.sk;
  a.d = geo.d;
  a.dv = geo.dv;
  for (int i = 0; i < 4; ++i) {
    a.qs[i] = geo.q[i];
    a.ks[i] = geo.k[i];
    a.vs[i] = geo.v[i];
    a.ms[i] = geo.m[i];
    a.os[i] = geo.o[i];
  }
  return a;
}

const std::vector<int64_t> kHeads = {0, 2, 1, 3};  // [B, S, H, D] read as [B, H, S, D]
const std::vector<int64_t> kSeqFirst = {1, 0, 2};  // [S, B*H, D] read as [B*H, S, D]

const Case kCases[] = {
    // BERT: heads read in place from [B, S, H, D], output written as [B, S, H, D], key mask [B, 1, 1, S].
    {"bert s128 d64 key mask",
     {2, 128, 3, 64},
     {2, 128, 3, 64},
     {2, 128, 3, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {2, 1, 1, 128},
     true},
    // ViT: [S, B*H, D], 197 tokens (partial query and key tiles), no mask.
    {"vit s197 d64", {197, 6, 64}, {197, 6, 64}, {197, 6, 64}, kSeqFirst, kSeqFirst, kSeqFirst, kSeqFirst, {}, true},
    // Sq != Sk, D = 128, a full [B, H, Sq, Sk] mask.
    {"d128 sq65 sk130 full mask",
     {2, 3, 65, 128},
     {2, 3, 130, 128},
     {2, 3, 130, 128},
     {},
     {},
     {},
     {},
     {2, 3, 65, 130},
     true},
    {"d64 sq77 sk33", {3, 77, 64}, {3, 33, 64}, {3, 33, 64}, {}, {}, {}, {}, {}, true},
    {"d32 sq33 sk77 per-query mask", {2, 33, 32}, {2, 77, 32}, {2, 77, 32}, {}, {}, {}, {}, {33, 77}, true},
    {"d64 sq1 sk1", {4, 1, 64}, {4, 1, 64}, {4, 1, 64}, {}, {}, {}, {}, {}, true},
    {"d128 sq1 sk300 key mask", {4, 1, 128}, {4, 300, 128}, {4, 300, 128}, {}, {}, {}, {}, {4, 1, 300}, true},
    // Many heads, full and partial query tiles.
    {"d64 s128 24 heads", {24, 128, 64}, {24, 128, 64}, {24, 128, 64}, {}, {}, {}, {}, {}, true},
    {"d64 s197 64 heads", {64, 197, 64}, {64, 197, 64}, {64, 197, 64}, {}, {}, {}, {}, {}, true},
    {"d64 s200 40 heads", {40, 200, 64}, {40, 200, 64}, {40, 200, 64}, {}, {}, {}, {}, {40, 1, 200}, true},
    // ViT's 197 tokens with a key mask at batch 3 (the lean kernel's masked path with a partial last tile).
    {"s197 key mask b3",
     {3, 197, 2, 64},
     {3, 197, 2, 64},
     {3, 197, 2, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {3, 1, 1, 197},
     true},
    // A mask row per query with 16-byte rows (the lean kernel copies it per tile): BERT's exported [B, 1, S, S];
    // partial query and key tiles; fully masked rows (uniform, or zeros with zero_masked_rows).
    {"bert s128 row mask",
     {2, 128, 3, 64},
     {2, 128, 3, 64},
     {2, 128, 3, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {2, 1, 128, 128},
     true},
    {"d64 sq77 sk200 row mask", {2, 77, 64}, {2, 200, 64}, {2, 200, 64}, {}, {}, {}, {}, {2, 77, 200}, true},
    {"row mask masked rows -inf",
     {1, 2, 40, 64},
     {1, 2, 72, 64},
     {1, 2, 72, 64},
     {},
     {},
     {},
     {},
     {1, 2, 40, 72},
     true,
     3},
    {"row mask masked rows zero",
     {1, 2, 40, 64},
     {1, 2, 72, 64},
     {1, 2, 72, 64},
     {},
     {},
     {},
     {},
     {1, 2, 40, 72},
     true,
     3,
     -kInf,
     true},
    // Batch-1 grids (12 heads): the key-split configurations; BERT-like with its key mask, ViT-like S = 197.
    {"bert b1 s128 key mask",
     {1, 128, 12, 64},
     {1, 128, 12, 64},
     {1, 128, 12, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {1, 1, 1, 128},
     true},
    {"vit b1 s197", {197, 12, 64}, {197, 12, 64}, {197, 12, 64}, kSeqFirst, kSeqFirst, kSeqFirst, kSeqFirst, {}, true},
    // Several stages of 256 keys (key split 4) with a tail, a key mask; a full mask over many stages at D = 32 / 128.
    {"d64 sq70 sk600 key mask", {3, 70, 64}, {3, 600, 64}, {3, 600, 64}, {}, {}, {}, {}, {3, 1, 600}, true},
    {"d32 sq50 sk300 full mask", {2, 50, 32}, {2, 300, 32}, {2, 300, 32}, {}, {}, {}, {}, {2, 50, 300}, true},
    {"d128 sq40 sk270", {2, 2, 40, 128}, {2, 2, 270, 128}, {2, 2, 270, 128}, {}, {}, {}, {}, {}, true},
    // Fewer keys than one tile of a split: warps with no keys at all.
    {"d64 sq100 sk20 key mask", {2, 100, 64}, {2, 20, 64}, {2, 20, 64}, {}, {}, {}, {}, {2, 1, 20}, true},
    // Output with a non-unit column stride: O [B, S, D] stored as [B, D, S].
    {"d64 strided output", {2, 70, 64}, {2, 90, 64}, {2, 90, 64}, {}, {}, {}, {0, 2, 1}, {2, 70, 90}, true},
    // Fully masked rows: the first 3 query rows of (0, 0) are -inf everywhere -> uniform, or zeros with the flag;
    // -1e9 rows stay finite (uniform as well). A key mask masking every key of batch entry 0: all its rows.
    {"masked rows -inf", {1, 2, 40, 64}, {1, 2, 70, 64}, {1, 2, 70, 64}, {}, {}, {}, {}, {1, 2, 40, 70}, true, 3},
    {"masked rows -1e9",
     {1, 2, 40, 64},
     {1, 2, 70, 64},
     {1, 2, 70, 64},
     {},
     {},
     {},
     {},
     {1, 2, 40, 70},
     true,
     3,
     -1e9f},
    {"masked rows zero",
     {1, 2, 40, 64},
     {1, 2, 70, 64},
     {1, 2, 70, 64},
     {},
     {},
     {},
     {},
     {1, 2, 40, 70},
     true,
     3,
     -kInf,
     true},
    {"masked entry uniform",
     {2, 100, 2, 64},
     {2, 100, 2, 64},
     {2, 100, 2, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {2, 1, 1, 100},
     true,
     1},
    {"masked entry zero",
     {2, 100, 2, 64},
     {2, 100, 2, 64},
     {2, 100, 2, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {2, 1, 1, 100},
     true,
     1,
     -kInf,
     true},
    // At most 16 query rows (one working warp of a lean block): 16 rows and a 2-key tail tile, 9 rows over 5 tiles
    // with a key mask, fully masked rows (row mask: uniform / zeros; key mask: every key of batch entry 0).
    {"short sq16 sk130", {2, 16, 64}, {2, 130, 64}, {2, 130, 64}, {}, {}, {}, {}, {}, true},
    {"short sq9 sk300 key mask", {3, 9, 64}, {3, 300, 64}, {3, 300, 64}, {}, {}, {}, {}, {3, 1, 300}, true},
    {"short row mask masked rows -inf",
     {1, 2, 3, 64},
     {1, 2, 72, 64},
     {1, 2, 72, 64},
     {},
     {},
     {},
     {},
     {1, 2, 3, 72},
     true,
     3},
    {"short row mask masked rows zero",
     {1, 2, 3, 64},
     {1, 2, 72, 64},
     {1, 2, 72, 64},
     {},
     {},
     {},
     {},
     {1, 2, 3, 72},
     true,
     3,
     -kInf,
     true},
    {"short masked entry uniform",
     {2, 10, 2, 64},
     {2, 10, 2, 64},
     {2, 10, 2, 64},
     kHeads,
     kHeads,
     kHeads,
     kHeads,
     {2, 1, 1, 10},
     true,
     1},
    // The short kernel's largest key range (256 keys, 16 chunks) with a key mask, and 255 keys without one.
    {"d64 sq70 sk256 key mask", {2, 70, 64}, {2, 256, 64}, {2, 256, 64}, {}, {}, {}, {}, {2, 1, 256}, true},
    {"d64 sq40 sk255", {2, 40, 64}, {2, 255, 64}, {2, 255, 64}, {}, {}, {}, {}, {}, true},
    // Its padded chunks: 177 keys in the 13-chunk build (one key in chunk 11, chunk 12 all padding), 97 keys with a
    // key mask in the 8-chunk build.
    {"d64 sq33 sk177", {2, 33, 64}, {2, 177, 64}, {2, 177, 64}, {}, {}, {}, {}, {}, true},
    {"d64 sq50 sk97 key mask", {2, 50, 64}, {2, 97, 64}, {2, 97, 64}, {}, {}, {}, {}, {2, 1, 97}, true},
    // Fallbacks: K given as K^T ([B, H, D, S], element stride S), D != Dv, D = 80.
    {"fallback k transposed", {2, 2, 50, 64}, {2, 2, 64, 50}, {2, 2, 50, 64}, {}, {0, 1, 3, 2}, {}, {}, {}, false},
    {"fallback dv32", {2, 50, 64}, {2, 50, 64}, {2, 50, 32}, {}, {}, {}, {}, {}, false},
    {"fallback d80", {2, 50, 80}, {2, 50, 80}, {2, 50, 80}, {}, {}, {}, {}, {}, false},
};

// The variant names to run: KILNRT_ATTENTION_TEST_VARIANTS (comma-separated) or all of them.
std::vector<std::string> variants_to_test() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("KILNRT_ATTENTION_TEST_VARIANTS"); env && *env) {
    std::stringstream ss(env);
    for (std::string v; std::getline(ss, v, ',');)
      if (!v.empty()) out.push_back(v);
    return out;
  }
  for (int i = 0; i < k::attention_mma_variant_count(); ++i) out.push_back(k::attention_mma_variant_name(i));
  return out;
}

// Sets KILNRT_ATTENTION_KERNEL for its scope (the previous value back at the end).
struct ForcedKernel {
  std::string old;
  bool had;
  explicit ForcedKernel(const std::string& name) {
    const char* o = std::getenv("KILNRT_ATTENTION_KERNEL");
    had = o != nullptr;
    if (had) old = o;
    setenv("KILNRT_ATTENTION_KERNEL", name.c_str(), 1);
  }
  ~ForcedKernel() {
    if (had)
      setenv("KILNRT_ATTENTION_KERNEL", old.c_str(), 1);
    else
      unsetenv("KILNRT_ATTENTION_KERNEL");
  }
};

void run_case(const Case& c, const Prec& p, const std::vector<std::string>& variants) {
  Built bt;
  build(c, bt);
  for (ir::Node& n : bt.g.nodes) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = p.name;
    n.attrs["kilnrt_precision"] = a;
  }
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : bt.b.feeds) {
    Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
    for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = round_to(r.data<float>()[i], p.dt);
    feeds[name] = r;
  }
  const Tensor want = run_cpu(bt.g, feeds).at("y");
  for (const std::string& variant : variants) {
    SCOPED_TRACE(std::string(c.label) + " " + p.name + " kernel " + variant);
    ForcedKernel forced(variant);
    const Tensor got = run_cuda(bt.g, feeds).at("y");
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_FALSE(std::isnan(got.data<float>()[i])) << "NaN at " << i;
    // P and O are rounded once each to the storage dtype: a few units of roundoff of |O| <= 1.
    expect_tensors_close(got, want, 6.0 * p.u, 8.0 * p.u);
    if (c.masked_rows > 0 && c.mask_value == -kInf) {
      // Fully masked rows, in Y's layout: count the output elements equal to zero there and compare with the flag.
      const ops::nn::AttentionGeometry geo = ops::nn::attention_geometry(bt.g.nodes[0], c.q, c.k, c.v, &c.mask);
      const bool key_mask = c.mask[c.mask.size() - 2] == 1;  // [B, 1, 1, S]: masks whole batch entries
      const int64_t rows = key_mask ? geo.b1 * geo.sq : c.masked_rows;
      int64_t zeros = 0, total = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t b1 = key_mask ? r / geo.sq : 0, i = key_mask ? r % geo.sq : r;
        for (int64_t col = 0; col < geo.dv; ++col, ++total)
          zeros += got.data<float>()[b1 * geo.o[1] + i * geo.o[2] + col * geo.o[3]] == 0.f;
      }
      if (c.zero_masked_rows)
        EXPECT_EQ(zeros, total) << "fully masked rows must be zeros";
      else
        EXPECT_LT(zeros, total / 4) << "fully masked rows must be the mean of V, not zeros";
    }
  }
}

}  // namespace

TEST(AttentionMmaDispatch, PicksTheMmaKernelWhereItsPreconditionsHold) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.label);
    Built bt;
    build(c, bt);
    EXPECT_EQ(k::attention_uses_mma(args_for(c, bt.g, 1)), c.mma);
    EXPECT_EQ(k::attention_uses_mma(args_for(c, bt.g, 2)), c.mma);
    EXPECT_FALSE(k::attention_uses_mma(args_for(c, bt.g, 0))) << "float32 storage never takes it";
  }
  // Misaligned rows: a row stride that is not a multiple of 8 elements, or a base pointer off 16 bytes.
  Built bt;
  build(kCases[0], bt);
  k::AttentionArgs a = args_for(kCases[0], bt.g, 1);
  ASSERT_TRUE(k::attention_uses_mma(a));
  k::AttentionArgs odd = a;
  odd.qs[2] += 4;
  EXPECT_FALSE(k::attention_uses_mma(odd));
  odd = a;
  odd.v = static_cast<const unsigned char*>(a.v) + 2;
  EXPECT_FALSE(k::attention_uses_mma(odd));
  odd = a;
  odd.b1 = 70000;  // beyond the grid's y limit
  EXPECT_FALSE(k::attention_uses_mma(odd));
}

TEST(AttentionMmaDispatch, VariantsHaveNamesAndTheEnvironmentForcesOne) {
  const int n = k::attention_mma_variant_count();
  ASSERT_GE(n, 2);
  EXPECT_STREQ(k::attention_mma_variant_name(0), "v1");
  EXPECT_STREQ(k::attention_mma_variant_name(n), "");
  EXPECT_STREQ(k::attention_mma_variant_name(-1), "");
  Built bt;
  build(kCases[0], bt);
  const k::AttentionArgs a = args_for(kCases[0], bt.g, 1);
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE(k::attention_mma_variant_name(i));
    EXPECT_GT(std::string(k::attention_mma_variant_name(i)).size(), 1u);
    ForcedKernel forced(k::attention_mma_variant_name(i));
    EXPECT_EQ(k::attention_mma_pick(a), i);
  }
  {
    ForcedKernel forced("no-such-kernel");  // an unknown name: the shape rule
    const int auto_pick = k::attention_mma_pick(a);
    EXPECT_GE(auto_pick, 0);
    EXPECT_LT(auto_pick, n);
  }
  // Out-of-range variants and arguments the kernels do not take are refused before any launch.
  EXPECT_NE(k::attention_mma_variant(a, n, nullptr), 0);
  EXPECT_NE(k::attention_mma_variant(a, -1, nullptr), 0);
  k::AttentionArgs f32 = a;
  f32.dt = 0;
  EXPECT_NE(k::attention_mma_variant(f32, 1, nullptr), 0);
}

TEST(AttentionMmaDispatch, ShapeRulePicksTheShortOrLeanKernelWhereItApplies) {
  Built bt;
  build(kCases[0], bt);  // BERT layout with its [B, 1, 1, S] key mask, D 64
  k::AttentionArgs a = args_for(kCases[0], bt.g, 1);
  ForcedKernel forced("");  // no forced variant: the shape rule
  const auto pick = [](const k::AttentionArgs& x) {
    return std::string(k::attention_mma_variant_name(k::attention_mma_pick(x)));
  };
  const auto lean = [&](const k::AttentionArgs& x) { return pick(x).rfind("lean", 0) == 0; };
  // Where the short kernel applies, the wgmma kernel takes its place on devices that run it (an H100 with this
  // build's sm_90a code); CI without a GPU checks the short-kernel rule.
  const bool wg = k::attention_wgmma_runs_here();
  const std::string short_pick = wg ? "wg2" : "short4";  // at >= 768 blocks of 64 rows; "wg" below
  if (const char* env = std::getenv("KILNRT_EXPECT_WGMMA"); env && *env == '1')
    ASSERT_TRUE(k::attention_wgmma_runs_here()) << "KILNRT_EXPECT_WGMMA=1 but the wgmma kernel does not run here";
  a.b0 = 32;
  a.b1 = 12;
  EXPECT_EQ(pick(a), short_pick) << "BERT b32";
  a.b0 = 8;
  EXPECT_EQ(pick(a), wg ? "wg" : "short4") << "BERT b8";
  a.b0 = 32;
  k::AttentionArgs nomask = a;
  nomask.mask = nullptr;
  nomask.sq = nomask.sk = 197;
  // More than 128 query rows and >= 264 (b0, b1) entries: the streamed-Q variant, one block per entry.
  const std::string long_pick = wg ? "wgs" : "short4";
  EXPECT_EQ(pick(nomask), long_pick) << "ViT b32";
  nomask.b0 = 8;  // 384 blocks: about one wave at 3 blocks per SM (the short kernel then yields to the lean one)
  EXPECT_EQ(pick(nomask), wg ? "wg" : "lean4") << "ViT b8";
  nomask.b0 = 32;
  nomask.sk = 150;  // 10 chunks: no build of the short kernel takes it
  EXPECT_EQ(pick(nomask), "lean4");
  nomask.sk = 257;  // beyond the short kernel
  EXPECT_EQ(pick(nomask), "lean4");
  for (int64_t sk : {97, 128, 177, 208, 225, 256}) {  // the key ranges of the 8, 13 and 16 chunk builds
    nomask.sk = sk;
    EXPECT_EQ(pick(nomask), long_pick) << "Sk " << sk;
  }
  k::AttentionArgs per_query = a;
  per_query.ms[2] = a.sk;  // a mask row per query, 16-byte rows: copied per tile, 8 warps per block at batch 32
  EXPECT_EQ(pick(per_query), "lean8");
  per_query.b0 = 1;
  EXPECT_EQ(pick(per_query), "lean4");
  per_query.b0 = 32;
  per_query.ms[2] = a.sk + 4;  // rows not 16-byte aligned
  EXPECT_FALSE(lean(per_query));
  per_query.ms[2] = a.sk;
  per_query.sk = per_query.sq = 100;  // Sk % 8 != 0
  EXPECT_FALSE(lean(per_query));
  k::AttentionArgs b1 = a;
  b1.b0 = 1;  // batch 1 as well
  const std::string small_pick = wg ? "wg" : "short4";
  EXPECT_EQ(pick(b1), small_pick);
  b1.mask = nullptr;
  b1.sq = b1.sk = 197;
  EXPECT_EQ(pick(b1), small_pick);
  b1.ms[2] = 197;  // ignored without a mask
  EXPECT_EQ(pick(b1), small_pick);
  k::AttentionArgs d32 = a;
  d32.d = d32.dv = 32;
  EXPECT_FALSE(lean(d32));
  EXPECT_NE(pick(d32), "short4");
  EXPECT_NE(pick(d32), "wg");
  EXPECT_NE(pick(d32), "wg2");
  EXPECT_NE(pick(d32), "wgs");
}

TEST(CudaAttentionMma, MatchesCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::vector<std::string> variants = variants_to_test();
  ASSERT_FALSE(variants.empty());
  for (const std::string& v : variants) {
    bool known = false;
    for (int i = 0; i < k::attention_mma_variant_count(); ++i) known |= v == k::attention_mma_variant_name(i);
    ASSERT_TRUE(known) << "unknown kernel variant " << v;
  }
  for (const Prec& p : kPrecs)
    for (const Case& c : kCases) run_case(c, p, variants);
}

}  // namespace kilnrt::cudatest
