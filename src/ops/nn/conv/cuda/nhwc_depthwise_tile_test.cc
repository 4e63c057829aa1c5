// The tiled NHWC depthwise kernel with its fused epilogue (nhwc_depthwise.h) against a CPU
// reference computed here from the same 16-bit inputs (double accumulation): 3x3 / 5x5 / 7x7, stride 1 and 2, even
// and odd sizes, begin / end padding that differ, batch 1 and 32 shapes of convnext / efficientnet / mobilenet,
// C = 8..768 (channel counts that do not split into equal CTA chunks), bias, residual and activations, fp16 and
// bf16, every rows-per-thread variant. Then one depthwise FusedConv (bias + residual + activation) through the CUDA
// layer in NHWC storage against the CPU engine. Host tests: where the kernel applies. GPU tests skip with a message
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cuda/cuda_plan.h"
#include "ops/nn/conv/cuda/nhwc_depthwise.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "depthwise_test_util.h"
#include "passes/fuse_conv_epilogue.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

TEST(CudaDepthwiseTile, AppliesToSquareOddKernelsStrideOneOrTwoAndEightChannelGroups) {
  alignas(16) static char buf[64];
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 96, 56, 56, 7, 1, 3)));
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(32, 144, 56, 56, 5, 2, 2)));
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 8, 3, 3, 3, 1, 0)));
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 12, 8, 8, 3, 1, 1)));    // C % 8
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 16, 8, 8, 1, 1, 0)));    // 1x1
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 16, 8, 8, 4, 1, 1)));    // even kernel
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(depthwise_geometry(1, 16, 16, 16, 3, 3, 1)));  // stride 3
  k::Conv2d p = depthwise_geometry(1, 16, 8, 8, 3, 1, 1);
  p.dh = p.dw = 2;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // dilation
  p = depthwise_geometry(1, 16, 8, 8, 3, 1, 1);
  p.kw = 5;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // not square
  p = depthwise_geometry(1, 16, 8, 8, 3, 1, 1);
  p.sw = 2;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // strides differ
  p = depthwise_geometry(1, 16, 8, 8, 3, 1, 1);
  p.groups = 8;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // grouped, not depthwise
  const k::Conv2d ok = depthwise_geometry(1, 16, 8, 8, 3, 1, 1);
  EXPECT_EQ(k::depthwise_nhwc_tile_applies(buf, buf, buf, nullptr, ok), k::depthwise_nhwc_tile_enabled());
  EXPECT_FALSE(k::depthwise_nhwc_tile_applies(buf + 2, buf, buf, nullptr, ok));
  EXPECT_FALSE(k::depthwise_nhwc_tile_applies(buf, buf, buf, buf + 8, ok));
  // Refused before any launch: no GPU needed.
  EXPECT_NE(k::depthwise_conv2d_nhwc_tile(1, buf, buf, buf, depthwise_geometry(1, 12, 8, 8, 3, 1, 1), {}, nullptr), 0);
  EXPECT_NE(k::depthwise_conv2d_nhwc_tile(1, buf + 2, buf, buf, ok, {}, nullptr), 0);
}

TEST(CudaDepthwiseTile, MatchesTheCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  GpuStream gpu;
  struct Case {
    int64_t n, c, h, w;
    int ks, s, pad, pad_end;
    bool bias, residual;
    int act;
    float a, b;
  };
  const Case cases[] = {
      {1, 96, 56, 56, 7, 1, 3, 3, true, false, 0, 0, 0},       // convnext stage 1, batch 1
      {32, 384, 14, 14, 7, 1, 3, 3, true, false, 0, 0, 0},     // convnext stage 3, batch 32
      {2, 768, 7, 7, 7, 1, 3, 3, true, true, 0, 0, 0},         // convnext stage 4, residual
      {2, 32, 28, 28, 3, 1, 1, 1, true, false, 7, 0, 0},       // efficientnet 3x3 + bias + silu
      {1, 144, 29, 30, 5, 2, 2, 2, true, false, 7, 0, 0},      // 5x5 stride 2, odd / even sizes
      {32, 96, 24, 24, 3, 2, 1, 1, true, false, 7, 0, 0},      // 3x3 stride 2, batch 32
      {1, 240, 14, 14, 5, 1, 2, 2, true, true, 1, 0, 0},       // bias + residual + relu
      {3, 8, 9, 11, 3, 1, 1, 1, true, true, 1, 0, 0},          // C = 8
      {2, 200, 10, 13, 5, 1, 2, 2, true, false, 5, 0, 0},      // 25 groups: uneven CTA chunks, hardswish
      {1, 184, 7, 7, 3, 1, 1, 1, false, true, 8, 0, 0},        // residual only, gelu
      {2, 16, 15, 17, 7, 2, 3, 3, false, false, 6, 0, 0},      // 7x7 stride 2, sigmoid
      {1, 24, 6, 5, 5, 1, 0, 0, true, false, 2, -0.5f, 0.5f},  // no padding, clip
      {1, 40, 20, 19, 3, 2, 1, 0, true, false, 3, 0.1f, 0},    // end pad differs (SAME-style), leaky relu
      {1, 72, 1, 1, 3, 1, 1, 1, true, false, 0, 0, 0},         // 1x1 image: only the centre tap
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int dt : {1, 2}) {
    for (const Case& cs : cases) {
      const k::Conv2d p = depthwise_geometry(cs.n, cs.c, cs.h, cs.w, cs.ks, cs.s, cs.pad, cs.pad_end);
      ASSERT_TRUE(k::depthwise_nhwc_tile_geometry(p));
      const DepthwiseOperands16 o = random_depthwise_operands(dt, p, rng, dist);
      // Reference: double accumulation over the 16-bit values, then the epilogue.
      const std::vector<double> bias_d = doubles_16bit(dt, o.bias), z_d = doubles_16bit(dt, o.z);
      const std::vector<double> ref =
          depthwise_reference(p, doubles_16bit(dt, o.x), doubles_16bit(dt, o.w), cs.bias ? &bias_d : nullptr,
                              cs.residual ? &z_d : nullptr, cs.act, cs.a, cs.b);
      k::DepthwiseEpilogue e;
      e.act = cs.act;
      e.a = cs.a;
      e.b = cs.b;
      const double tol = dt == 1 ? 2e-3 : 1.6e-2;  // one rounding of the output, float32 vs double sums
      ASSERT_NO_FATAL_FAILURE(expect_tile_kernel_matches(
          gpu, dt, p, o, e, cs.bias, cs.residual, ref, tol,
          (::testing::Message() << (dt == 1 ? "fp16" : "bf16") << " n " << cs.n << " c " << cs.c << " " << cs.h << "x"
                                << cs.w << " k " << cs.ks << " s " << cs.s << " pad " << cs.pad << "/" << cs.pad_end
                                << " act " << cs.act)
              .GetString()));
    }
  }
}

// A depthwise conv + bias + residual Add + activation, fused by the pass, run by the CUDA layer in NHWC storage
// (fp16 and bf16) against the CPU engine; the layer names the tiled kernel in its tactic.
TEST(CudaDepthwiseTile, FusedDepthwiseLayerInNhwcMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  namespace tc = kilnrt::testing_conv;
  struct Nhwc {
    Nhwc() { setenv("KILNRT_CUDA_NHWC", "1", 1); }
    ~Nhwc() { unsetenv("KILNRT_CUDA_NHWC"); }
  } nhwc;
  for (const char* act : {"Relu", "Sigmoid"}) {
    for (const char* prec : {"fp16", "bf16"}) {
      SCOPED_TRACE(::testing::Message() << act << " " << prec);
      tc::GraphBuilder b;
      b.input("x", {2, 8, 12, 12});
      b.conv("x", "c0", 8, 24, 1, 1, true, 1);  // to 24 channels (NHWC from here on)
      b.input("z", {2, 24, 12, 12});
      b.conv("c0", "dw", 24, 24, 5, 24, true, 1);
      b.node("Add", {"dw", "z"}, {"s"});
      b.node(act, {"s"}, {"a"});
      b.conv("a", "y", 24, 8, 1, 1, true, 1);
      b.output("y");
      ir::Graph g = b.finish();
      ASSERT_GE(passes::fuse_conv_epilogues(g), 1u);
      passes::infer_shapes(g);
      for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = tc::string_attr(prec);
      std::map<std::string, Tensor> feeds;
      feeds["x"] = tc::random_tensor({2, 8, 12, 12}, 3, -1.f, 1.f);
      feeds["z"] = tc::random_tensor({2, 24, 12, 12}, 4, -1.f, 1.f);
      const auto want = run_cpu(g, feeds);
      const auto got = run_cuda(g, feeds);
      const bool bf = std::string(prec) == "bf16";
      expect_tensors_close(got.at("y"), want.at("y"), bf ? 0.25 : 0.04, bf ? 0.06 : 0.015);
      kilnrt::cuda::ContextGuard guard(0);
      backends::cuda::CudaPlan plan(g, 0);
      std::string tactics;
      for (const auto& [node, t] : plan.tactics()) tactics += t + " ";
      EXPECT_NE(tactics.find("nhwc:kernel:depthwise-tile"), std::string::npos) << tactics;
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
