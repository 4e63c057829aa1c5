// The 8-channel NHWC depthwise kernel (nhwc_depthwise_vec.cu) against the scalar one (nhwc_depthwise.cu)
// on the GPU, fp16 and bf16: stride-1 and stride-2 strips (3x3, 5x5, 7x7, widths that are not multiples of the
// strip), the general path (dilation 2, 1x1, even kernel), padding on every side. Run it with KILNRT_CUDA_DW_TX=1/2/4/8
// too (the strip width knob; unset, these small layers get strips of 1). Host test: where it applies.
// GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/nn/conv/cuda/conv_kernels.h"
#include "cuda_backend_test_util.h"
#include "kernel16_test_util.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

k::Conv2d geometry(int64_t n, int64_t c, int64_t h, int64_t w, int kh, int kw, int s, int pad, int dil) {
  k::Conv2d p;
  p.n = n;
  p.c = p.k = c;
  p.groups = static_cast<int>(c);
  p.h = h;
  p.w = w;
  p.kh = kh;
  p.kw = kw;
  p.sh = p.sw = s;
  p.ph = p.pw = pad;
  p.dh = p.dw = dil;
  p.oh = (h + 2 * pad - dil * (kh - 1) - 1) / s + 1;
  p.ow = (w + 2 * pad - dil * (kw - 1) - 1) / s + 1;
  return p;
}

TEST(CudaDepthwiseVec, AppliesOnlyToMultiplesOfEightChannelsAndAlignedPointers) {
  alignas(16) static char buf[64];
  const k::Conv2d p8 = geometry(1, 16, 4, 4, 3, 3, 1, 1, 1), p6 = geometry(1, 6, 4, 4, 3, 3, 1, 1, 1);
  EXPECT_TRUE(k::depthwise_conv2d_nhwc_vec8_applies(buf, buf, buf, p8));
  EXPECT_FALSE(k::depthwise_conv2d_nhwc_vec8_applies(buf, buf, buf, p6));
  EXPECT_FALSE(k::depthwise_conv2d_nhwc_vec8_applies(buf + 2, buf, buf, p8));
  k::Conv2d grouped = p8;
  grouped.groups = 8;
  EXPECT_FALSE(k::depthwise_conv2d_nhwc_vec8_applies(buf, buf, buf, grouped));
}

TEST(CudaDepthwiseVec, MatchesTheScalarKernel) {
  KILNRT_SKIP_WITHOUT_GPU();
  GpuStream gpu;
  struct Case {
    int64_t n, c, h, w;
    int kh, kw, s, pad, dil;
  };
  const Case cases[] = {{2, 64, 14, 14, 3, 3, 1, 1, 1},
                        {1, 96, 13, 13, 7, 7, 1, 3, 1},
                        {2, 40, 9, 11, 5, 5, 1, 2, 1},
                        {1, 32, 15, 15, 5, 5, 2, 2, 1},
                        {1, 16, 10, 10, 3, 3, 1, 2, 2},
                        {3, 8, 5, 6, 1, 1, 1, 0, 1},
                        {1, 24, 8, 8, 4, 2, 1, 1, 1},
                        {1, 768, 7, 7, 7, 7, 1, 3, 1},
                        {1, 8, 3, 2, 3, 3, 1, 0, 1},
                        // stride-2 strips: 3x3 / 5x5 / 7x7, odd and even widths, a strip running past the edge
                        {2, 48, 16, 17, 3, 3, 2, 1, 1},
                        {1, 16, 7, 7, 3, 3, 2, 0, 1},
                        {1, 24, 14, 9, 7, 7, 2, 3, 1},
                        {1, 8, 4, 30, 5, 5, 2, 2, 1}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int dt : {1, 2}) {
    for (const Case& cs : cases) {
      const k::Conv2d p = geometry(cs.n, cs.c, cs.h, cs.w, cs.kh, cs.kw, cs.s, cs.pad, cs.dil);
      SCOPED_TRACE(::testing::Message() << (dt == 1 ? "fp16" : "bf16") << " c " << cs.c << " " << cs.h << "x" << cs.w
                                        << " k " << cs.kh << "x" << cs.kw << " s " << cs.s << " pad " << cs.pad
                                        << " dil " << cs.dil);
      const std::vector<uint16_t> x = random_16bit(dt, p.n * p.h * p.w * p.c, rng, dist),
                                  w = random_16bit(dt, int64_t(p.kh) * p.kw * p.c, rng, dist);
      const size_t ny = static_cast<size_t>(p.n * p.oh * p.ow * p.c);
      kilnrt::cuda::DeviceBuffer dx(gpu.dev, x.size() * 2), dw(gpu.dev, w.size() * 2), dy1(gpu.dev, ny * 2),
          dy2(gpu.dev, ny * 2);
      dx.copy_from_host_async(x.data(), x.size() * 2, gpu.stream.get());
      dw.copy_from_host_async(w.data(), w.size() * 2, gpu.stream.get());
      dy1.memset_async(0xff, gpu.stream.get());
      dy2.memset_async(0xff, gpu.stream.get());
      const auto s = static_cast<k::StreamT>(gpu.stream.get());
      ASSERT_TRUE(k::depthwise_conv2d_nhwc_vec8_applies(dx.data(), dw.data(), dy1.data(), p));
      ASSERT_EQ(k::depthwise_conv2d_nhwc_vec8(dt, dx.data(), dw.data(), dy1.data(), p, s), 0);
      ASSERT_EQ(k::depthwise_conv2d_nhwc_scalar(dt, dx.data(), dw.data(), dy2.data(), p, s), 0);
      std::vector<uint16_t> y1(ny), y2(ny);
      dy1.copy_to_host_async(y1.data(), ny * 2, gpu.stream.get());
      dy2.copy_to_host_async(y2.data(), ny * 2, gpu.stream.get());
      gpu.stream.synchronize();
      const double tol = dt == 1 ? 2e-3 : 1.6e-2;  // one rounding of |y| <= kh*kw, fma vs mul+add
      int bad = 0;
      for (size_t i = 0; i < ny && bad < 5; ++i) {
        const float a = from_16bit(dt, y1[i]);
        const float b = from_16bit(dt, y2[i]);
        if (!(std::abs(a - b) <= tol * (1.0 + std::abs(b)))) {
          ++bad;
          ADD_FAILURE() << "element " << i << ": vec8 " << a << ", scalar " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
