// The pointwise-convolution GEMM with fused epilogue (pointwise_conv.h, conv tactic "pw-mma") against a
// float64 host reference of the same 16-bit inputs: every tile variant, float16 and bfloat16, row counts that are not
// multiples of the tile, channel counts from 8 to 1152 (K loops of one stage to 36, partial last stages), bias and
// residual present or not, the activations of MobileNet / EfficientNet blocks. The host test checks where the kernel
// applies. GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <random>
#include <vector>

#include "ops/nn/conv/cuda/pointwise_conv.h"
#include "cuda_backend_test_util.h"
#include "kernel16_test_util.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

double activate(int act, double v) {
  switch (act) {
    case 1: return v < 0 ? 0 : v;
    case 5: return v * std::min(1.0, std::max(0.0, v / 6 + 0.5));
    case 6: return 1 / (1 + std::exp(-v));
    case 7: return v / (1 + std::exp(-v));
    default: return v;
  }
}

TEST(CudaPointwiseConv, AppliesToMultiplesOfEightAndAlignedOperands) {
  alignas(16) static char buf[64];
  k::PointwiseConvArgs a;
  a.x = a.w = a.y = buf;
  a.m = 10, a.c = 16, a.n = 24;
  EXPECT_TRUE(k::pointwise_conv_applies(a));
  a.c = 12;
  EXPECT_FALSE(k::pointwise_conv_applies(a));
  a.c = 16, a.n = 20;
  EXPECT_FALSE(k::pointwise_conv_applies(a));
  a.n = 24;
  a.x = buf + 8;
  EXPECT_FALSE(k::pointwise_conv_applies(a));
  a.x = buf;
  a.z = buf + 2;
  EXPECT_FALSE(k::pointwise_conv_applies(a));
  a.z = nullptr;
  a.dt = 0;
  EXPECT_FALSE(k::pointwise_conv_applies(a));
  a.dt = 2;
  EXPECT_TRUE(k::pointwise_conv_applies(a));
  EXPECT_NE(k::pointwise_conv(a, k::kPointwiseConvVariants, nullptr), 0);  // no such variant: refused, no launch
}

TEST(CudaPointwiseConv, MatchesTheHostReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  GpuStream gpu;
  struct Case {
    int64_t m, c, n;
    bool bias, z;
    int act;
  };
  const Case cases[] = {
      {1, 8, 8, false, false, 0},      {200, 16, 96, true, false, 7},  {1000, 24, 144, true, false, 7},
      {333, 40, 240, true, true, 1},   {4096, 96, 24, true, true, 0},  {257, 192, 1152, true, false, 5},
      {50, 1152, 320, true, false, 0}, {129, 136, 72, false, true, 7}, {64, 32, 64, true, false, 5},
      {3000, 16, 32, true, false, 7},  {77, 480, 80, true, true, 0},   {190, 72, 200, true, false, 5},
      {150, 32, 48, true, false, 6},  // sigmoid: the generic (runtime) activation path
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int dt : {1, 2}) {
    for (const Case& cs : cases) {
      const std::vector<uint16_t> x = random_16bit(dt, cs.m * cs.c, rng, dist),
                                  w = random_16bit(dt, cs.n * cs.c, rng, dist), b = random_16bit(dt, cs.n, rng, dist),
                                  z = random_16bit(dt, cs.m * cs.n, rng, dist);
      // float64 reference of the 16-bit inputs
      std::vector<double> want(static_cast<size_t>(cs.m * cs.n));
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < cs.n; ++j) {
          double s = cs.bias ? from_16bit(dt, b[j]) : 0.0;
          for (int64_t c = 0; c < cs.c; ++c)
            s += double(from_16bit(dt, x[i * cs.c + c])) * from_16bit(dt, w[j * cs.c + c]);
          if (cs.z) s += from_16bit(dt, z[i * cs.n + j]);
          want[i * cs.n + j] = activate(cs.act, s);
        }
      kilnrt::cuda::DeviceBuffer dx(gpu.dev, x.size() * 2), dw(gpu.dev, w.size() * 2), db(gpu.dev, b.size() * 2),
          dz(gpu.dev, z.size() * 2), dy(gpu.dev, want.size() * 2);
      dx.copy_from_host_async(x.data(), x.size() * 2, gpu.stream.get());
      dw.copy_from_host_async(w.data(), w.size() * 2, gpu.stream.get());
      db.copy_from_host_async(b.data(), b.size() * 2, gpu.stream.get());
      dz.copy_from_host_async(z.data(), z.size() * 2, gpu.stream.get());
      for (int v = 0; v < k::kPointwiseConvVariants; ++v) {
        SCOPED_TRACE(::testing::Message()
                     << (dt == 1 ? "fp16" : "bf16") << " m " << cs.m << " c " << cs.c << " n " << cs.n << " bias "
                     << cs.bias << " z " << cs.z << " act " << cs.act << " variant " << v);
        dy.memset_async(0xff, gpu.stream.get());  // NaN everywhere: an element left unwritten fails
        k::PointwiseConvArgs a;
        a.dt = dt;
        a.x = dx.data(), a.w = dw.data(), a.y = dy.data();
        a.bias = cs.bias ? db.data() : nullptr;
        a.z = cs.z ? dz.data() : nullptr;
        a.m = cs.m, a.c = cs.c, a.n = cs.n;
        a.act = cs.act;
        ASSERT_TRUE(k::pointwise_conv_applies(a));
        ASSERT_EQ(k::pointwise_conv(a, v, static_cast<k::StreamT>(gpu.stream.get())), 0);
        std::vector<uint16_t> y(want.size());
        dy.copy_to_host_async(y.data(), y.size() * 2, gpu.stream.get());
        gpu.stream.synchronize();
        // float32 accumulation of |products| <= 1, one rounding to the storage type
        const double tol = (dt == 1 ? 1e-3 : 8e-3) + 2e-6 * double(cs.c);
        int bad = 0;
        for (size_t i = 0; i < y.size() && bad < 5; ++i) {
          const double got = from_16bit(dt, y[i]);
          if (!(std::abs(got - want[i]) <= tol * (1.0 + std::abs(want[i])))) {
            ++bad;
            ADD_FAILURE() << "element " << i << " (row " << i / cs.n << ", channel " << i % cs.n << "): got " << got
                          << ", want " << want[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest

namespace kilnrt::cudatest {
namespace {

// KILNRT_PW_BENCH=1: GPU time of every variant on the 1x1 convolutions of EfficientNet-B0 at batch 32 (SiLU expand
// convs, identity project convs), printed; no assertion on time (benchmarks are not tests). Skips otherwise.
TEST(CudaPointwiseConv, BenchEfficientNetShapes) {
  KILNRT_SKIP_WITHOUT_GPU();
  const char* on = std::getenv("KILNRT_PW_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set KILNRT_PW_BENCH=1 to time the kernel";
  GpuStream gpu;
  struct Case {
    int64_t m, c, n;
    int act;
  };
  const Case cases[] = {{401408, 16, 96, 7}, {100352, 24, 144, 7}, {25088, 40, 240, 7},  {6272, 80, 480, 7},
                        {6272, 480, 80, 0},  {25088, 240, 40, 0},  {1568, 192, 1152, 7}, {1568, 1152, 320, 0}};
  for (const Case& cs : cases) {
    kilnrt::cuda::DeviceBuffer dx(gpu.dev, cs.m * cs.c * 2), dw(gpu.dev, cs.n * cs.c * 2), db(gpu.dev, cs.n * 2),
        dy(gpu.dev, cs.m * cs.n * 2);
    dx.memset_async(0, gpu.stream.get());
    dw.memset_async(0, gpu.stream.get());
    db.memset_async(0, gpu.stream.get());
    k::PointwiseConvArgs a;
    a.dt = 1;
    a.x = dx.data(), a.w = dw.data(), a.y = dy.data(), a.bias = db.data();
    a.m = cs.m, a.c = cs.c, a.n = cs.n, a.act = cs.act;
    for (int v = 0; v < k::kPointwiseConvVariants; ++v) {
      const auto s = static_cast<k::StreamT>(gpu.stream.get());
      ASSERT_EQ(k::pointwise_conv(a, v, s), 0);
      kilnrt::cuda::Event e0(gpu.dev, true), e1(gpu.dev, true);
      e0.record(gpu.stream);
      for (int i = 0; i < 20; ++i) ASSERT_EQ(k::pointwise_conv(a, v, s), 0);
      e1.record(gpu.stream);
      e1.synchronize();
      const double us = kilnrt::cuda::Event::elapsed_ms(e0, e1) * 1000.0 / 20;
      const double mb = double(cs.m * cs.c + cs.m * cs.n + cs.n * cs.c) * 2 / 1e6;
      std::printf("pw-bench m %lld c %lld n %lld act %d variant %d: %.1f us, %.0f GB/s\n", (long long)cs.m,
                  (long long)cs.c, (long long)cs.n, cs.act, v, us, mb / us * 1e3);
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
