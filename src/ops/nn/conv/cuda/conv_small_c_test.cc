// Convolutions with few input channels (ops/nn/conv/cuda/conv_small_c.h): the im2col GEMM, the channel
// pack + cuDNN NHWC, the direct and the stem kernel paths against the CPU reference, fp16 and bf16, C = 1 / 3 / 4,
// the zoo stems (resnet50 7x7/2 pad 3, efficientnet / mobilenet 3x3/2 pad 1, vit_b_16 16x16/16, convnext 4x4/4) and
// other strides / pads, plain Conv with bias and FusedConv with bias + activation, NCHW and NHWC outputs, batch 1 and
// 5, batches that take several workspace chunks; float32 engines keep the usual path. Host tests: which paths
// apply, and the weights each path uploads. GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/nn/conv/cuda/conv_small_c.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "passes/fuse_conv_epilogue.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;
using backends::cuda::SmallCConv;
using backends::cuda::SmallCPath;

namespace {

struct Geo {
  int64_t n, c, h, w, k;
  int kh, kw, stride, pad;
};

// Conv node (attributes of `g`), optional bias, optional Relu (fused into a FusedConv when `fuse`), optional Neg
// after it so that the convolution's output is not a graph output (NHWC plans: the conv then writes NHWC).
ir::Graph conv_graph(const Geo& g, bool bias, bool relu, bool tail, uint32_t seed = 11) {
  GraphBuilder b;
  b.seed = seed;
  b.input("x", {g.n, g.c, g.h, g.w});
  std::vector<std::string> ins = {"x", b.random_constant("W", {g.k, g.c, g.kh, g.kw}, -0.5f, 0.5f)};
  if (bias) ins.push_back(b.random_constant("B", {g.k}));
  ir::Node& n = b.node("Conv", ins, {"c"});
  n.attrs["kernel_shape"] = ints_attr({g.kh, g.kw});
  n.attrs["strides"] = ints_attr({g.stride, g.stride});
  n.attrs["pads"] = ints_attr({g.pad, g.pad, g.pad, g.pad});
  std::string cur = "c";
  if (relu) {
    b.node("Relu", {cur}, {"r"});
    cur = "r";
  }
  if (tail) {
    b.node("Neg", {cur}, {"y"});
    cur = "y";
  }
  b.output(cur);
  ir::Graph out = b.finish();
  if (relu) passes::fuse_conv_epilogues(out);
  passes::infer_shapes(out);
  return out;
}

void set_precision(ir::Graph& g, const char* p) {
  for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(p);
}

std::string tactics_of(const ir::Graph& g) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::string s;
  for (const auto& [node, t] : plan.tactics()) s += node + "=" + t + " ";
  return s;
}

using cudatest::ScopedEnv;

// Runs `g` (precision p: "fp16", "bf16" or "" for float32) on CUDA and on the CPU reference and compares; checks
// that the tactic names the small-C path exactly when `expect_small_c`.
void check(const ir::Graph& g0, const char* prec, bool expect_small_c, const char* expect_in_tactic = nullptr) {
  ir::Graph g = g0;
  if (*prec) set_precision(g, prec);
  std::map<std::string, Tensor> feeds;
  const Shape xs = ir::sym_shape_to_shape(g.type_of("x")->shape);
  feeds["x"] = random_tensor(xs, 5, -1.f, 1.f);
  const auto want = cudatest::run_cpu(g0, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  // 16-bit operands, float32 accumulation: the error grows with the dot length (C*KH*KW).
  const Tensor& w = g.constants.at("W");
  const double len = double(w.numel() / w.dim(0));
  const double scale = std::sqrt(len / 27.0);
  const std::string p = prec;
  const double atol = p == "bf16" ? 4e-2 * scale : p == "fp16" ? 6e-3 * scale : 1e-4;
  const double rtol = p == "bf16" ? 2e-2 : p == "fp16" ? 4e-3 : 1e-4;
  for (const std::string& o : g.outputs) cudatest::expect_tensors_close(got.at(o), want.at(o), atol, rtol);
  const std::string tactics = tactics_of(g);
  EXPECT_EQ(tactics.find("small-c") != std::string::npos, expect_small_c) << tactics;
  if (expect_in_tactic) EXPECT_NE(tactics.find(expect_in_tactic), std::string::npos) << tactics;
}

// Zoo stems at full size (batch 1) and smaller geometries of every kind.
const Geo kStemResnet = {1, 3, 224, 224, 64, 7, 7, 2, 3};
const Geo kStemVit = {1, 3, 224, 224, 768, 16, 16, 16, 0};
const Geo kStemConvnext = {1, 3, 224, 224, 96, 4, 4, 4, 0};

// ---- host ----------------------------------------------------------------------------------------------------------

ir::Node conv_node(int64_t k, int64_t s, int64_t pad) {
  ir::Node n;
  n.name = "conv";
  n.op_type = "Conv";
  n.inputs = {"x", "W"};
  n.outputs = {"y"};
  n.attrs["kernel_shape"] = ints_attr({k, k});
  n.attrs["strides"] = ints_attr({s, s});
  n.attrs["pads"] = ints_attr({pad, pad, pad, pad});
  return n;
}

// Records uploads (host copies) instead of touching a device.
struct RecordingWeights final : backends::cuda::DeviceWeights {
  std::map<std::string, Tensor> uploads;
  const void* get(const std::string&) const override { return nullptr; }
  const void* upload(const std::string& key, const Tensor& host) override {
    uploads[key] = host.clone();
    return uploads[key].raw();
  }
};

// x -> Conv(g) + bias -> act (fused) -> Neg (so that the conv output is an inner tensor: NHWC in NHWC plans).
ir::Graph act_graph(const Geo& g, const char* act, uint32_t seed = 21) {
  GraphBuilder b;
  b.seed = seed;
  b.input("x", {g.n, g.c, g.h, g.w});
  ir::Node& n = b.node(
      "Conv", {"x", b.random_constant("W", {g.k, g.c, g.kh, g.kw}, -0.5f, 0.5f), b.random_constant("B", {g.k})}, {"c"});
  n.attrs["kernel_shape"] = ints_attr({g.kh, g.kw});
  n.attrs["strides"] = ints_attr({g.stride, g.stride});
  n.attrs["pads"] = ints_attr({g.pad, g.pad, g.pad, g.pad});
  std::string cur = "c";
  if (*act) {
    b.node(act, {cur}, {"r"});
    cur = "r";
  }
  b.node("Neg", {cur}, {"y"});
  b.output("y");
  ir::Graph graph = b.finish();
  passes::fuse_conv_epilogues(graph);
  passes::infer_shapes(graph);
  return graph;
}

// act_graph(g, act) for every geometry of `geos`, activation ("", Relu, HardSwish, Sigmoid), fp16 / bf16 and NHWC /
// NCHW plans (KILNRT_CUDA_NHWC 1 / 0): the small-C path taken, `expect` in its tactic.
template <size_t N>
void check_layouts_activations_precisions(const Geo (&geos)[N], const char* expect) {
  const char* acts[] = {"", "Relu", "HardSwish", "Sigmoid"};
  for (const char* layout : {"1", "0"}) {
    ScopedEnv nhwc("KILNRT_CUDA_NHWC", layout);
    for (const Geo& g : geos) {
      for (const char* act : acts) {
        for (const char* prec : {"fp16", "bf16"}) {
          SCOPED_TRACE(::testing::Message()
                       << "NHWC=" << layout << " " << prec << " n" << g.n << " c" << g.c << " " << g.h << "x" << g.w
                       << " k" << g.kh << " s" << g.stride << " p" << g.pad << " K" << g.k << " act " << act);
          check(act_graph(g, act), prec, true, expect);
        }
      }
    }
  }
}

}  // namespace

TEST(CudaConvSmallC, PathsThatApply) {
  using P = std::vector<SmallCPath>;
  const P all = {SmallCPath::kIm2colGemm, SmallCPath::kPack8Cudnn, SmallCPath::kPack4Cudnn, SmallCPath::kDirectMma,
                 SmallCPath::kStemMma};
  const P no_cudnn = {SmallCPath::kIm2colGemm, SmallCPath::kDirectMma, SmallCPath::kStemMma};
  EXPECT_EQ(SmallCConv::applicable_paths(conv_node(16, 16, 0), true), all);
  EXPECT_EQ(SmallCConv::applicable_paths(conv_node(16, 16, 0), false), no_cudnn);
  EXPECT_EQ(SmallCConv::applicable_paths(conv_node(7, 2, 3), true), all);
  EXPECT_EQ(SmallCConv::applicable_paths(conv_node(7, 2, 3), false), no_cudnn);
  {
    ScopedEnv off("KILNRT_CUDA_SMALL_C_DIRECT", "0");
    EXPECT_EQ(SmallCConv::applicable_paths(conv_node(7, 2, 3), false),
              (P{SmallCPath::kIm2colGemm, SmallCPath::kStemMma}));
  }
  EXPECT_TRUE(SmallCConv::is_patchify(conv_node(16, 16, 0)));
  EXPECT_TRUE(SmallCConv::is_patchify(conv_node(4, 4, 0)));
  EXPECT_FALSE(SmallCConv::is_patchify(conv_node(4, 4, 1)));  // padded
  EXPECT_FALSE(SmallCConv::is_patchify(conv_node(7, 2, 3)));
  ir::Node dilated = conv_node(2, 2, 0);
  dilated.attrs["dilations"] = ints_attr({2, 2});
  EXPECT_FALSE(SmallCConv::is_patchify(dilated));
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(16, 16, 0), true), SmallCPath::kIm2colGemm);
  // Even strides with KW + pw % 2 <= 8: the stem kernel (resnet50's 7x7/2 pad 3, the 3x3/2 pad 1 stems).
  for (bool cudnn : {true, false}) {
    EXPECT_EQ(SmallCConv::fixed_rule(conv_node(7, 2, 3), cudnn), SmallCPath::kStemMma);
    EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 2, 1), cudnn), SmallCPath::kStemMma);
    EXPECT_EQ(SmallCConv::fixed_rule(conv_node(8, 2, 0), cudnn), SmallCPath::kStemMma);
  }
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(8, 2, 1), true), SmallCPath::kPack8Cudnn);  // 8 taps + 1 lead > 8
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 1, 1), true), SmallCPath::kDirectMma);   // stride 1
  ScopedEnv no_stem("KILNRT_CUDA_SMALL_C_STEM", "0");
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(7, 2, 3), true), SmallCPath::kPack8Cudnn);  // 49 taps: pack8
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(7, 2, 3), false), SmallCPath::kIm2colGemm);
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 2, 1), true), SmallCPath::kDirectMma);  // 3x3 stems: direct
  EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 2, 1), false), SmallCPath::kDirectMma);
  {
    ScopedEnv off("KILNRT_CUDA_SMALL_C_DIRECT", "0");
    EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 2, 1), true), SmallCPath::kPack8Cudnn);
    EXPECT_EQ(SmallCConv::fixed_rule(conv_node(3, 2, 1), false), SmallCPath::kIm2colGemm);
  }
}

TEST(CudaConvSmallC, CreatesOnlyFor16BitSmallChannelConvsAndRepacksWeights) {
  auto graph_with = [](const ir::Node& n, int64_t c, const char* prec) {
    ir::Graph g;
    g.nodes.push_back(n);
    g.nodes.back().attrs["kilnrt_precision"] = string_attr(prec);
    g.constants["W"] = random_tensor({2, c, 2, 2}, 3);
    return g;
  };
  for (const char* prec : {"fp16", "bf16"}) {
    SCOPED_TRACE(prec);
    ir::Graph g = graph_with(conv_node(2, 2, 0), 3, prec);
    RecordingWeights w;
    backends::cuda::LayerCreateArgs a{g.nodes[0], g, 17, w, 0};
    auto s = SmallCConv::create(a, true);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->path(), SmallCPath::kIm2colGemm);
    EXPECT_NE(s->tactic().find("im2col"), std::string::npos);
    // [K, kc_pad]: 12 weights per filter then zeros up to 16.
    const std::string key = std::string("conv/small_c_gemm_W#") + prec;
    ASSERT_EQ(w.uploads.count(key), 1u);
    const Tensor& t = w.uploads.at(key);
    ASSERT_EQ(t.shape(), (Shape{2, 16}));
    const bool bf = std::string(prec) == "bf16";
    auto val = [&](int64_t i) {
      const uint16_t v = t.data<uint16_t>()[i];
      return bf ? bfloat16_to_float(v) : half_to_float(v);
    };
    const float* src = g.constants.at("W").data<float>();
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t j = 0; j < 16; ++j)
        EXPECT_NEAR(val(o * 16 + j), j < 12 ? src[o * 12 + j] : 0.f, bf ? 1e-2 : 1e-3) << o << " " << j;
    // The pack path: [K, KH, KW, 8], channel innermost, zeros beyond C.
    ASSERT_TRUE(s->set_path(SmallCPath::kPack8Cudnn, a));
    const Tensor& p8 = w.uploads.at(std::string("conv/small_c_pack8_W#") + prec);
    ASSERT_EQ(p8.shape(), (Shape{2, 2, 2, 8}));
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 0; x < 2; ++x)
          for (int64_t c = 0; c < 8; ++c) {
            const uint16_t v = p8.data<uint16_t>()[((o * 2 + y) * 2 + x) * 8 + c];
            const float f = bf ? bfloat16_to_float(v) : half_to_float(v);
            EXPECT_NEAR(f, c < 3 ? src[((o * 3 + c) * 2 + y) * 2 + x] : 0.f, bf ? 1e-2 : 1e-3);
          }
  }
  // Not for: float32 / tf32 layers, C > 4, grouped convs, KILNRT_CUDA_SMALL_C=0 or KILNRT_CUDA_CONV=direct.
  RecordingWeights w;
  for (const char* prec : {"fp32", "tf32"}) {
    ir::Graph g = graph_with(conv_node(2, 2, 0), 3, prec);
    EXPECT_FALSE(SmallCConv::create({g.nodes[0], g, 17, w, 0}, true)) << prec;
  }
  ir::Graph wide = graph_with(conv_node(2, 2, 0), 5, "fp16");
  EXPECT_FALSE(SmallCConv::create({wide.nodes[0], wide, 17, w, 0}, true));
  ir::Graph grouped = graph_with(conv_node(2, 2, 0), 1, "fp16");
  grouped.nodes[0].attrs["group"] = int_attr(3);
  EXPECT_FALSE(SmallCConv::create({grouped.nodes[0], grouped, 17, w, 0}, true));
  ir::Graph padded = graph_with(conv_node(3, 1, 1), 3, "fp16");
  auto without_cudnn = SmallCConv::create({padded.nodes[0], padded, 17, w, 0}, false);
  ASSERT_TRUE(without_cudnn);
  EXPECT_EQ(without_cudnn->path(), SmallCPath::kIm2colGemm);
  auto with_cudnn = SmallCConv::create({padded.nodes[0], padded, 17, w, 0}, true);
  ASSERT_TRUE(with_cudnn);
  EXPECT_EQ(with_cudnn->path(), SmallCPath::kPack8Cudnn);
  {
    ScopedEnv off("KILNRT_CUDA_SMALL_C", "0");
    ir::Graph g = graph_with(conv_node(2, 2, 0), 3, "fp16");
    EXPECT_FALSE(SmallCConv::create({g.nodes[0], g, 17, w, 0}, true));
  }
  {
    ScopedEnv direct("KILNRT_CUDA_CONV", "direct");
    ir::Graph g = graph_with(conv_node(2, 2, 0), 3, "fp16");
    EXPECT_FALSE(SmallCConv::create({g.nodes[0], g, 17, w, 0}, true));
  }
  {
    ScopedEnv gemm("KILNRT_CUDA_SMALL_C", "gemm");
    auto s = SmallCConv::create({padded.nodes[0], padded, 17, w, 0}, true);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->path(), SmallCPath::kIm2colGemm);
  }
  {
    ScopedEnv pack4("KILNRT_CUDA_SMALL_C", "pack4");
    ir::Graph g = graph_with(conv_node(2, 2, 0), 4, "fp16");  // C == 4 does not fit 4 channels plus padding rule
    EXPECT_FALSE(SmallCConv::create({g.nodes[0], g, 17, w, 0}, true));
  }
}

// ---- GPU -----------------------------------------------------------------------------------------------------------

TEST(CudaConvSmallC, ZooStemsMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  ScopedEnv nhwc("KILNRT_CUDA_NHWC", "1");
  for (const char* prec : {"fp16", "bf16"}) {
    SCOPED_TRACE(prec);
    // resnet50: FusedConv bias + relu on the stem kernel, NHWC and NCHW output (a graph output).
    check(conv_graph(kStemResnet, true, true, true), prec, true, "stem-mma");
    check(conv_graph(kStemResnet, true, true, false), prec, true, "stem-mma");
    {  // ... on the NHWC pack path; NCHW output: cuDNN NCHW fallback.
      ScopedEnv pack("KILNRT_CUDA_SMALL_C", "pack8");
      check(conv_graph(kStemResnet, true, true, true), prec, true, "pack8");
      check(conv_graph(kStemResnet, true, true, false), prec, true);
    }
    {  // ... and on the direct kernel, NHWC and NCHW output.
      ScopedEnv direct("KILNRT_CUDA_SMALL_C", "direct");
      check(conv_graph(kStemResnet, true, true, true), prec, true, "direct-mma");
      check(conv_graph(kStemResnet, true, true, false), prec, true, "direct-mma");
    }
    // efficientnet_b0 / mobilenet_v3_large: 3x3/2 pad 1 stems, stem kernel by default, and the direct kernel.
    check(conv_graph({1, 3, 224, 224, 32, 3, 3, 2, 1}, true, true, true), prec, true, "stem-mma");
    check(conv_graph({2, 3, 224, 224, 16, 3, 3, 2, 1}, true, true, false), prec, true, "stem-mma");
    {
      ScopedEnv direct("KILNRT_CUDA_SMALL_C", "direct");
      check(conv_graph({1, 3, 224, 224, 32, 3, 3, 2, 1}, true, true, true), prec, true, "direct-mma");
      check(conv_graph({2, 3, 224, 224, 16, 3, 3, 2, 1}, true, true, false), prec, true, "direct-mma");
    }
    {  // ... and on the im2col GEMM: NHWC (bias + relu in cuBLASLt's epilogue), NCHW.
      ScopedEnv gemm("KILNRT_CUDA_SMALL_C", "gemm");
      check(conv_graph(kStemResnet, true, true, true), prec, true, "im2col");
      check(conv_graph(kStemResnet, true, true, false), prec, true, "im2col");
    }
    // vit_b_16: plain Conv with bias, NCHW output (strided batched GEMM) and NHWC output (bias epilogue).
    check(conv_graph(kStemVit, true, false, false), prec, true, "im2col");
    check(conv_graph(kStemVit, true, false, true), prec, true, "im2col");
    // convnext: NCHW and NHWC.
    check(conv_graph(kStemConvnext, true, false, false), prec, true, "im2col");
    check(conv_graph(kStemConvnext, true, true, true), prec, true, "im2col");
  }
}

TEST(CudaConvSmallC, EveryPathLayoutChannelCountAndBatch) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Geo geos[] = {
      {5, 3, 30, 30, 16, 7, 7, 2, 3},     // resnet-like stem, odd output size
      {1, 1, 17, 19, 8, 3, 3, 1, 1},      // C = 1, stride 1
      {5, 4, 20, 24, 24, 3, 3, 2, 0},     // C = 4, no pad
      {1, 3, 33, 31, 12, 5, 5, 1, 2},     // 5x5 pad 2
      {5, 3, 32, 48, 40, 4, 4, 4, 0},     // patchify 4x4
      {1, 4, 32, 32, 20, 8, 8, 8, 0},     // patchify C = 4
      {5, 1, 18, 18, 8, 3, 3, 3, 0},      // patchify C = 1, kc 9 padded to 16
      {1, 3, 34, 34, 16, 16, 16, 16, 0},  // patchify with a remainder (34 / 16: 2 patches, rows 32..33 unused)
  };
  for (const char* layout : {"1", "0"}) {
    ScopedEnv nhwc("KILNRT_CUDA_NHWC", layout);
    for (const char* mode : {"auto", "gemm", "pack8", "pack4"}) {
      ScopedEnv env("KILNRT_CUDA_SMALL_C", mode);
      for (const Geo& g : geos) {
        const bool applies = std::string(mode) == "pack4" ? g.c < 4 : true;
        for (const char* prec : {"fp16", "bf16"}) {
          for (bool fused : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "NHWC=" << layout << " mode " << mode << " " << prec << " n" << g.n
                                              << " c" << g.c << " " << g.h << "x" << g.w << " k" << g.kh << " s"
                                              << g.stride << " p" << g.pad << (fused ? " fused relu" : ""));
            check(conv_graph(g, true, fused, true), prec, applies);
          }
        }
      }
    }
  }
}

// The direct tensor-core kernel (small_c_direct.cu): every K it takes (16..128), C = 1..4, kernel sizes,
// strides and pads, tails of the 64-pixel tile, the activations it applies itself, NCHW and NHWC, fp16 and bf16.
TEST(CudaConvSmallC, DirectKernelShapesActivationsAndLayouts) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Geo geos[] = {
      {2, 3, 30, 30, 64, 7, 7, 2, 3},   // resnet-like stem, odd output size
      {3, 3, 23, 29, 32, 3, 3, 2, 1},   // efficientnet-like stem
      {1, 3, 21, 21, 16, 3, 3, 2, 1},   // mobilenet-like stem, 11x11 = 121 pixels: a partial second tile
      {1, 1, 15, 15, 48, 5, 5, 1, 2},   // C = 1
      {2, 4, 20, 20, 128, 3, 3, 1, 1},  // C = 4, K = 128
      {1, 3, 31, 33, 96, 3, 3, 2, 0},   // no pad, K = 96
  };
  ScopedEnv direct("KILNRT_CUDA_SMALL_C", "direct");  // 5x5 / 7x7 windows take pack8 by default
  check_layouts_activations_precisions(geos, "direct-mma");
}

TEST(CudaConvSmallC, Float32EnginesKeepTheUsualPath) {
  KILNRT_SKIP_WITHOUT_GPU();
  check(conv_graph({2, 3, 20, 20, 8, 7, 7, 2, 3}, true, true, true), "", false);
  check(conv_graph({2, 3, 32, 32, 8, 4, 4, 4, 0}, true, false, false), "", false);
}

TEST(CudaConvSmallC, BatchesLargerThanTheWorkspaceRunInChunks) {
  KILNRT_SKIP_WITHOUT_GPU();
  ScopedEnv nhwc("KILNRT_CUDA_NHWC", "1");
  // pack8: 224x224x8 halves = 0.8 MB per image, so 40 images take two chunks of the 32 MB workspace.
  check(conv_graph({40, 3, 224, 224, 4, 7, 7, 2, 3}, true, true, true), "fp16", true, "pack8");
  // patchify 16x16: 196 x 768 halves = 0.3 MB per image: 100 images take two chunks, NCHW and NHWC.
  check(conv_graph({100, 3, 224, 224, 8, 16, 16, 16, 0}, true, false, false), "fp16", true, "im2col");
  check(conv_graph({100, 3, 224, 224, 8, 16, 16, 16, 0}, true, false, true), "fp16", true, "im2col");
  // im2col of the resnet stem: 12544 x 152 halves = 3.8 MB per image: 12 images take two chunks, NHWC and NCHW.
  ScopedEnv gemm("KILNRT_CUDA_SMALL_C", "gemm");
  check(conv_graph({12, 3, 224, 224, 4, 7, 7, 2, 3}, true, true, true), "fp16", true, "im2col");
  check(conv_graph({12, 3, 224, 224, 4, 7, 7, 2, 3}, true, true, false), "fp16", true, "im2col");
}

// ---- the stem kernel (small_c_stem.cu) ---------------------------------------------------------------------

TEST(CudaConvSmallC, StemWeightLayout) {
  // [K, kpad]: per (c, ky) filter row kxp slots, `lead` = pw % 2 zeros, then the KW taps, zeros after them.
  struct Case {
    int64_t k, c;
    int kh, kw, stride, pad, kxp, lead;
    int64_t kpad;
  };
  const Case cases[] = {{16, 3, 7, 7, 2, 3, 8, 1, 176},  // resnet50: 21 rows of 8 -> 168 -> 176
                        {32, 3, 3, 3, 2, 1, 4, 1, 48},   // efficientnet / mobilenet: 9 rows of 4 -> 36 -> 48
                        {16, 4, 3, 3, 2, 0, 4, 0, 48},
                        {48, 1, 8, 8, 2, 0, 8, 0, 64}};
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << cs.kh << "x" << cs.kw << " s" << cs.stride << " p" << cs.pad << " c" << cs.c);
    ir::Graph g;
    g.nodes.push_back(conv_node(cs.kh, cs.stride, cs.pad));
    g.nodes.back().attrs["kernel_shape"] = ints_attr({cs.kh, cs.kw});
    g.nodes.back().attrs["kilnrt_precision"] = string_attr("fp16");
    g.constants["W"] = random_tensor({cs.k, cs.c, cs.kh, cs.kw}, 3);
    RecordingWeights w;
    auto s = SmallCConv::create({g.nodes[0], g, 17, w, 0}, true);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->path(), SmallCPath::kStemMma);
    EXPECT_NE(s->tactic().find("stem-mma"), std::string::npos);
    const Tensor& t = w.uploads.at("conv/small_c_stem_W#fp16");
    ASSERT_EQ(t.shape(), (Shape{cs.k, cs.kpad}));
    const float* src = g.constants.at("W").data<float>();
    int nonzero_slots = 0;
    for (int64_t o = 0; o < cs.k; ++o)
      for (int64_t j = 0; j < cs.kpad; ++j) {
        const int64_t row = j / cs.kxp, slot = j % cs.kxp - cs.lead;
        const int64_t ci = row / cs.kh, ky = row % cs.kh;
        const bool tap = ci < cs.c && slot >= 0 && slot < cs.kw;
        const float want = tap ? src[((o * cs.c + ci) * cs.kh + ky) * cs.kw + slot] : 0.f;
        nonzero_slots += tap;
        EXPECT_NEAR(half_to_float(t.data<uint16_t>()[o * cs.kpad + j]), want, 1e-3) << o << " " << j;
      }
    EXPECT_EQ(nonzero_slots, cs.k * cs.c * cs.kh * cs.kw);
  }
  // K the kernel does not take (here 24): the rule's next choice.
  ir::Graph g;
  g.nodes.push_back(conv_node(3, 2, 1));
  g.nodes.back().attrs["kilnrt_precision"] = string_attr("fp16");
  g.constants["W"] = random_tensor({24, 3, 3, 3}, 3);
  RecordingWeights w;
  auto s = SmallCConv::create({g.nodes[0], g, 17, w, 0}, true);
  ASSERT_TRUE(s);
  EXPECT_NE(s->path(), SmallCPath::kStemMma);
}

// Every K the stem kernel takes (16 / 32 / 48 / 64), C = 1..4, windows with and without the lead slot (odd / even
// pads), 4- and 8-tap rows, non-square windows, strides 2 and 4, rows that take 16-byte copies (W % 8 == 0) and rows
// that do not, partial tiles, the activations it applies, NCHW and NHWC outputs, fp16 and bf16.
TEST(CudaConvSmallC, StemKernelShapesActivationsAndLayouts) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Geo geos[] = {
      {2, 3, 30, 30, 64, 7, 7, 2, 3},  // resnet-like stem, odd output size, W % 8 != 0
      {1, 3, 40, 48, 64, 7, 7, 2, 3},  // resnet-like, 16-byte row copies
      {3, 3, 23, 29, 32, 3, 3, 2, 1},  // efficientnet-like stem
      {1, 3, 21, 21, 16, 3, 3, 2, 1},  // mobilenet-like stem, 121 pixels: partial tiles
      {2, 3, 32, 40, 48, 5, 5, 2, 2},  // K = 48, 5 taps + no lead
      {1, 1, 17, 16, 16, 3, 3, 2, 0},  // C = 1, no pad
      {2, 4, 24, 24, 32, 4, 4, 2, 1},  // C = 4, 4 taps + lead: 8-tap rows
      {1, 3, 40, 48, 64, 7, 7, 4, 3},  // stride 4
      {2, 2, 19, 24, 16, 2, 2, 2, 1},  // 2x2 pad 1
      {1, 3, 9, 8, 64, 8, 8, 2, 0},    // 8 taps, no lead, one output row
  };
  check_layouts_activations_precisions(geos, "stem-mma");
  // A 5x3 window (KH != KW).
  check(act_graph({2, 3, 20, 26, 32, 5, 3, 2, 1}, "Relu"), "fp16", true, "stem-mma");
}

// Blocks that loop over several tiles (the grid capped by KILNRT_CUDA_SMALL_C_STEM_BLOCKS, and a batch with more
// tiles than resident blocks), with both row-copy kinds, and a stem whose input comes from another layer.
TEST(CudaConvSmallC, StemKernelLoopsOverTiles) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* layout : {"1", "0"}) {
    ScopedEnv nhwc("KILNRT_CUDA_NHWC", layout);
    {
      ScopedEnv blocks("KILNRT_CUDA_SMALL_C_STEM_BLOCKS", "3");
      check(act_graph({4, 3, 64, 64, 64, 7, 7, 2, 3}, "Relu"), "fp16", true, "stem-mma");
      check(act_graph({5, 3, 50, 46, 32, 3, 3, 2, 1}, "HardSwish"), "bf16", true, "stem-mma");
    }
    check(act_graph({6, 3, 224, 224, 64, 7, 7, 2, 3}, "Relu"), "fp16", true, "stem-mma");  // 294 tiles
  }
  // x -> 1x1 conv (3 -> 4 channels) -> relu -> 3x3/2 stem (4 -> 32): the stem reads another layer's output.
  GraphBuilder b;
  b.seed = 5;
  b.input("x", {2, 3, 32, 32});
  ir::Node& pre = b.node("Conv", {"x", b.random_constant("W0", {4, 3, 1, 1}, -0.5f, 0.5f)}, {"p"});
  pre.attrs["kernel_shape"] = ints_attr({1, 1});
  b.node("Relu", {"p"}, {"q"});
  ir::Node& stem =
      b.node("Conv", {"q", b.random_constant("W", {32, 4, 3, 3}, -0.5f, 0.5f), b.random_constant("B", {32})}, {"c"});
  stem.attrs["kernel_shape"] = ints_attr({3, 3});
  stem.attrs["strides"] = ints_attr({2, 2});
  stem.attrs["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Neg", {"c"}, {"y"});
  b.output("y");
  ir::Graph g = b.finish();
  passes::infer_shapes(g);
  ScopedEnv nhwc("KILNRT_CUDA_NHWC", "1");
  check(g, "fp16", true, "stem-mma");
}

// The stem kernel's host-side rules (conv_small_c_kernels.h): the weight layout per geometry and the launches it
// takes (no GPU needed).
TEST(CudaConvSmallC, StemKernelLayoutAndApplicability) {
  namespace k = kilnrt::cuda::kernels;
  k::SmallCStemLayout l;
  ASSERT_TRUE(k::small_c_stem_layout(3, 7, 7, 2, 3, &l));  // resnet50
  EXPECT_EQ(l.kxp, 8);
  EXPECT_EQ(l.lead, 1);
  EXPECT_EQ(l.kpad, 176);
  ASSERT_TRUE(k::small_c_stem_layout(3, 3, 3, 2, 1, &l));  // efficientnet / mobilenet
  EXPECT_EQ(l.kxp, 4);
  EXPECT_EQ(l.lead, 1);
  EXPECT_EQ(l.kpad, 48);
  ASSERT_TRUE(k::small_c_stem_layout(1, 3, 3, 4, 0, &l));
  EXPECT_EQ(l.kxp, 4);
  EXPECT_EQ(l.lead, 0);
  EXPECT_EQ(l.kpad, 16);
  EXPECT_FALSE(k::small_c_stem_layout(3, 3, 3, 1, 1, &l));   // stride 1: odd
  EXPECT_FALSE(k::small_c_stem_layout(3, 3, 3, 3, 1, &l));   // stride 3: odd
  EXPECT_FALSE(k::small_c_stem_layout(3, 8, 8, 2, 1, &l));   // 8 taps + lead > 8
  EXPECT_FALSE(k::small_c_stem_layout(5, 3, 3, 2, 1, &l));   // C > 4
  EXPECT_FALSE(k::small_c_stem_layout(4, 40, 8, 2, 0, &l));  // kpad 1280 > 512

  k::Conv2d p;  // resnet50's stem at batch 32
  p.n = 32;
  p.c = 3;
  p.h = p.w = 224;
  p.k = 64;
  p.oh = p.ow = 112;
  p.kh = p.kw = 7;
  p.sh = p.sw = 2;
  p.ph = p.pw = 3;
  ASSERT_TRUE(k::small_c_stem_layout(p.c, p.kh, p.kw, p.sw, p.pw, &l));
  EXPECT_TRUE(k::small_c_stem_applies(p, l));
  k::Conv2d q = p;
  for (int64_t kk : {8, 24, 80, 128}) {
    q.k = kk;
    EXPECT_FALSE(k::small_c_stem_applies(q, l)) << kk;
  }
  q = p;
  q.dh = q.dw = 2;
  EXPECT_FALSE(k::small_c_stem_applies(q, l));  // dilation
  q = p;
  q.pw = 2;  // the weights were laid out for an odd pad (lead slot)
  EXPECT_FALSE(k::small_c_stem_applies(q, l));
  q = p;
  q.groups = 3;
  EXPECT_FALSE(k::small_c_stem_applies(q, l));
  q = p;
  q.w = 1 << 20;  // input rows too long for shared memory
  q.ow = (q.w + 2 * q.pw - q.kw) / q.sw + 1;
  EXPECT_FALSE(k::small_c_stem_applies(q, l));
}
