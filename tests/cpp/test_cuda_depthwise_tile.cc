// The tiled NHWC depthwise kernel with its fused epilogue (kernels/nhwc_depthwise.h, issue 7) against a CPU
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
#include "backends/cuda/kernels/nhwc_depthwise.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "passes/fuse_conv_epilogue.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

// Begin pads `pad`, end pads `pad_end` (-1: the same).
k::Conv2d geometry(int64_t n, int64_t c, int64_t h, int64_t w, int ks, int s, int pad, int pad_end = -1) {
  if (pad_end < 0) pad_end = pad;
  k::Conv2d p;
  p.n = n;
  p.c = p.k = c;
  p.groups = static_cast<int>(c);
  p.h = h;
  p.w = w;
  p.kh = p.kw = ks;
  p.sh = p.sw = s;
  p.ph = p.pw = pad;
  p.oh = (h + pad + pad_end - ks) / s + 1;
  p.ow = (w + pad + pad_end - ks) / s + 1;
  return p;
}

TEST(CudaDepthwiseTile, AppliesToSquareOddKernelsStrideOneOrTwoAndEightChannelGroups) {
  alignas(16) static char buf[64];
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(geometry(1, 96, 56, 56, 7, 1, 3)));
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(geometry(32, 144, 56, 56, 5, 2, 2)));
  EXPECT_TRUE(k::depthwise_nhwc_tile_geometry(geometry(1, 8, 3, 3, 3, 1, 0)));
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(geometry(1, 12, 8, 8, 3, 1, 1)));   // C % 8
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(geometry(1, 16, 8, 8, 1, 1, 0)));   // 1x1
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(geometry(1, 16, 8, 8, 4, 1, 1)));   // even kernel
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(geometry(1, 16, 16, 16, 3, 3, 1)));  // stride 3
  k::Conv2d p = geometry(1, 16, 8, 8, 3, 1, 1);
  p.dh = p.dw = 2;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // dilation
  p = geometry(1, 16, 8, 8, 3, 1, 1);
  p.kw = 5;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // not square
  p = geometry(1, 16, 8, 8, 3, 1, 1);
  p.sw = 2;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // strides differ
  p = geometry(1, 16, 8, 8, 3, 1, 1);
  p.groups = 8;
  EXPECT_FALSE(k::depthwise_nhwc_tile_geometry(p));  // grouped, not depthwise
  const k::Conv2d ok = geometry(1, 16, 8, 8, 3, 1, 1);
  EXPECT_EQ(k::depthwise_nhwc_tile_applies(buf, buf, buf, nullptr, ok), k::depthwise_nhwc_tile_enabled());
  EXPECT_FALSE(k::depthwise_nhwc_tile_applies(buf + 2, buf, buf, nullptr, ok));
  EXPECT_FALSE(k::depthwise_nhwc_tile_applies(buf, buf, buf, buf + 8, ok));
  // Refused before any launch: no GPU needed.
  EXPECT_NE(k::depthwise_conv2d_nhwc_tile(1, buf, buf, buf, geometry(1, 12, 8, 8, 3, 1, 1), {}, nullptr), 0);
  EXPECT_NE(k::depthwise_conv2d_nhwc_tile(1, buf + 2, buf, buf, ok, {}, nullptr), 0);
}

double activate(int act, double x, double a, double b) {
  switch (act) {
    case 1: return x < 0 ? 0 : x;
    case 2: return x < a ? a : (x > b ? b : x);
    case 3: return x < 0 ? a * x : x;
    case 5: return x * std::fmin(1.0, std::fmax(0.0, x / 6 + 0.5));
    case 6: return 1 / (1 + std::exp(-x));
    case 7: return x / (1 + std::exp(-x));
    case 8: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

TEST(CudaDepthwiseTile, MatchesTheCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  const int dev = 0;
  kilnrt::cuda::ContextGuard guard(dev);
  kilnrt::cuda::Stream stream(dev);
  struct Case {
    int64_t n, c, h, w;
    int ks, s, pad, pad_end;
    bool bias, residual;
    int act;
    float a, b;
  };
  const Case cases[] = {
      {1, 96, 56, 56, 7, 1, 3, 3, true, false, 0, 0, 0},      // convnext stage 1, batch 1
      {32, 384, 14, 14, 7, 1, 3, 3, true, false, 0, 0, 0},    // convnext stage 3, batch 32
      {2, 768, 7, 7, 7, 1, 3, 3, true, true, 0, 0, 0},        // convnext stage 4, residual
      {2, 32, 28, 28, 3, 1, 1, 1, true, false, 7, 0, 0},      // efficientnet 3x3 + bias + silu
      {1, 144, 29, 30, 5, 2, 2, 2, true, false, 7, 0, 0},     // 5x5 stride 2, odd / even sizes
      {32, 96, 24, 24, 3, 2, 1, 1, true, false, 7, 0, 0},     // 3x3 stride 2, batch 32
      {1, 240, 14, 14, 5, 1, 2, 2, true, true, 1, 0, 0},      // bias + residual + relu
      {3, 8, 9, 11, 3, 1, 1, 1, true, true, 1, 0, 0},         // C = 8
      {2, 200, 10, 13, 5, 1, 2, 2, true, false, 5, 0, 0},     // 25 groups: uneven CTA chunks, hardswish
      {1, 184, 7, 7, 3, 1, 1, 1, false, true, 8, 0, 0},       // residual only, gelu
      {2, 16, 15, 17, 7, 2, 3, 3, false, false, 6, 0, 0},     // 7x7 stride 2, sigmoid
      {1, 24, 6, 5, 5, 1, 0, 0, true, false, 2, -0.5f, 0.5f}, // no padding, clip
      {1, 40, 20, 19, 3, 2, 1, 0, true, false, 3, 0.1f, 0},   // end pad differs (SAME-style), leaky relu
      {1, 72, 1, 1, 3, 1, 1, 1, true, false, 0, 0, 0},        // 1x1 image: only the centre tap
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int dt : {1, 2}) {
    auto to_f = [&](uint16_t v) { return dt == 1 ? half_to_float(v) : bfloat16_to_float(v); };
    for (const Case& cs : cases) {
      const k::Conv2d p = geometry(cs.n, cs.c, cs.h, cs.w, cs.ks, cs.s, cs.pad, cs.pad_end);
      ASSERT_TRUE(k::depthwise_nhwc_tile_geometry(p));
      auto make = [&](int64_t count) {
        std::vector<uint16_t> v(static_cast<size_t>(count));
        for (auto& e : v) e = dt == 1 ? float_to_half(dist(rng)) : float_to_bfloat16(dist(rng));
        return v;
      };
      const size_t ny = static_cast<size_t>(p.n * p.oh * p.ow * p.c);
      const std::vector<uint16_t> x = make(p.n * p.h * p.w * p.c), w = make(int64_t(p.kh) * p.kw * p.c),
                                  bias = make(p.c), z = make(static_cast<int64_t>(ny));
      // Reference: double accumulation over the 16-bit values, then the epilogue.
      std::vector<double> ref(ny);
      for (int64_t b = 0; b < p.n; ++b)
        for (int64_t oy = 0; oy < p.oh; ++oy)
          for (int64_t ox = 0; ox < p.ow; ++ox)
            for (int64_t c = 0; c < p.c; ++c) {
              double acc = cs.bias ? to_f(bias[c]) : 0.0;
              for (int ky = 0; ky < p.kh; ++ky)
                for (int kx = 0; kx < p.kw; ++kx) {
                  const int64_t iy = oy * p.sh - p.ph + ky, ix = ox * p.sw - p.pw + kx;
                  if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                  acc += double(to_f(x[((b * p.h + iy) * p.w + ix) * p.c + c])) * to_f(w[(ky * p.kw + kx) * p.c + c]);
                }
              const size_t i = static_cast<size_t>(((b * p.oh + oy) * p.ow + ox) * p.c + c);
              if (cs.residual) acc += to_f(z[i]);
              ref[i] = activate(cs.act, acc, cs.a, cs.b);
            }
      kilnrt::cuda::DeviceBuffer dx(dev, x.size() * 2), dw(dev, w.size() * 2), db(dev, bias.size() * 2),
          dz(dev, ny * 2), dy(dev, ny * 2);
      dx.copy_from_host_async(x.data(), x.size() * 2, stream.get());
      dw.copy_from_host_async(w.data(), w.size() * 2, stream.get());
      db.copy_from_host_async(bias.data(), bias.size() * 2, stream.get());
      dz.copy_from_host_async(z.data(), ny * 2, stream.get());
      k::DepthwiseEpilogue e;
      e.bias = cs.bias ? db.data() : nullptr;
      e.z = cs.residual ? dz.data() : nullptr;
      e.act = cs.act;
      e.a = cs.a;
      e.b = cs.b;
      for (int rows : {0, 1, 2, 4}) {
        SCOPED_TRACE(::testing::Message() << (dt == 1 ? "fp16" : "bf16") << " n " << cs.n << " c " << cs.c << " "
                                          << cs.h << "x" << cs.w << " k " << cs.ks << " s " << cs.s << " pad "
                                          << cs.pad << "/" << cs.pad_end << " act " << cs.act << " rows " << rows);
        dy.memset_async(0xff, stream.get());
        ASSERT_EQ(k::depthwise_conv2d_nhwc_tile(dt, dx.data(), dw.data(), dy.data(), p, e,
                                                static_cast<k::StreamT>(stream.get()), rows),
                  0);
        std::vector<uint16_t> y(ny);
        dy.copy_to_host_async(y.data(), ny * 2, stream.get());
        stream.synchronize();
        const double tol = dt == 1 ? 2e-3 : 1.6e-2;  // one rounding of the output, float32 vs double sums
        int bad = 0;
        for (size_t i = 0; i < ny && bad < 5; ++i) {
          const double got = to_f(y[i]);
          if (!(std::abs(got - ref[i]) <= tol * (1.0 + std::abs(ref[i])))) {
            ++bad;
            ADD_FAILURE() << "element " << i << ": got " << got << ", want " << ref[i];
          }
        }
      }
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
