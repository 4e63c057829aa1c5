// The 8-channel NHWC pooling kernel (ops/nn/pool/cuda/pool2d_nhwc.cu, pool2d_nhwc_kernels.h) against a host
// reference of the same float32 arithmetic and against the scalar kernel, fp16 and bf16, max and average:
// resnet50's 3x3/2 pad 1, 2x2/2, 3x3/1 pad 1, ceil_mode output sizes (a last window past the input), dilation 2,
// count_include_pad on and off, NaN inputs (max propagates them), strips of 1 / 2 / 4 outputs and widths that are
// not multiples of the strip.
// Host test: where it applies. GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/nn/pool/cuda/pool2d_nhwc_kernels.h"
#include "cuda_backend_test_util.h"
#include "kernel16_test_util.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

k::Pool2d geometry(int64_t n, int64_t c, int64_t h, int64_t w, int kern, int s, int pad, int dil, bool ceil_mode,
                   bool max, bool include_pad) {
  k::Pool2d p;
  p.n = n;
  p.c = c;
  p.h = h;
  p.w = w;
  p.kh = p.kw = kern;
  p.sh = p.sw = s;
  p.ph = p.pw = pad;
  p.dh = p.dw = dil;
  p.max = max;
  p.count_include_pad = include_pad;
  auto out = [&](int64_t in) {
    const int64_t span = in + 2 * pad - dil * (kern - 1) - 1;
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) --o;  // the last window must start inside the input or left padding
    return o;
  };
  p.oh = out(h);
  p.ow = out(w);
  return p;
}

// Host reference: the kernels' float32 arithmetic in the same order.
std::vector<float> reference(const std::vector<float>& x, const k::Pool2d& p) {
  std::vector<float> y(static_cast<size_t>(p.n * p.oh * p.ow * p.c));
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox)
        for (int64_t c = 0; c < p.c; ++c) {
          float acc = p.max ? -INFINITY : 0.f;
          int count = 0;
          for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx) {
              const int64_t iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
              const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
              const float v = inside ? x[static_cast<size_t>(((b * p.h + iy) * p.w + ix) * p.c + c)] : 0.f;
              if (p.max) {
                if (inside) acc = (acc != acc || acc > v) ? acc : v;
              } else {
                if (inside) acc += v;
                if (inside || (p.count_include_pad && iy < p.h + p.ph && ix < p.w + p.pw)) ++count;
              }
            }
          y[static_cast<size_t>(((b * p.oh + oy) * p.ow + ox) * p.c + c)] =
              p.max ? acc : (count > 0 ? acc / float(count) : 0.f);
        }
  return y;
}

TEST(CudaPoolVec, AppliesOnlyTo16BitMultiplesOfEightChannelsAndAlignedPointers) {
  alignas(16) static char buf[64];
  const k::Pool2d p8 = geometry(1, 16, 4, 4, 3, 2, 1, 1, false, true, false);
  const k::Pool2d p6 = geometry(1, 6, 4, 4, 3, 2, 1, 1, false, true, false);
  EXPECT_TRUE(k::pool2d_nhwc_vec8_applies(1, buf, buf, p8));
  EXPECT_TRUE(k::pool2d_nhwc_vec8_applies(2, buf, buf, p8));
  EXPECT_FALSE(k::pool2d_nhwc_vec8_applies(0, buf, buf, p8));  // float32
  EXPECT_FALSE(k::pool2d_nhwc_vec8_applies(1, buf, buf, p6));
  EXPECT_FALSE(k::pool2d_nhwc_vec8_applies(1, buf + 2, buf, p8));
  EXPECT_FALSE(k::pool2d_nhwc_vec8_applies(1, buf, buf + 8, p8));
  // Refused (not enqueued) where it does not apply.
  EXPECT_NE(k::pool2d_nhwc_vec8(1, buf, buf, p6, 2, nullptr), 0);
}

TEST(CudaPoolVec, MatchesTheReferenceAndTheScalarKernel) {
  KILNRT_SKIP_WITHOUT_GPU();
  GpuStream gpu;
  struct Case {
    int64_t n, c, h, w;
    int kern, s, pad, dil;
    bool ceil_mode;
  };
  const Case cases[] = {{2, 64, 20, 20, 3, 2, 1, 1, false},    // resnet50's max pool, smaller
                        {1, 64, 112, 112, 3, 2, 1, 1, false},  // ... full size
                        {3, 16, 9, 11, 3, 2, 1, 1, true},      // ceil_mode, odd sizes
                        {1, 8, 8, 8, 2, 2, 0, 1, false},      {2, 24, 7, 13, 3, 1, 1, 1, false},
                        {1, 32, 10, 10, 3, 1, 2, 2, false},  // dilation 2
                        {1, 40, 7, 7, 7, 7, 0, 1, false},    // one window over everything
                        {2, 8, 5, 33, 2, 2, 1, 1, true},     // ceil_mode with padding
                        {1, 16, 3, 3, 3, 1, 1, 1, false}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-3.f, 3.f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int dt : {1, 2}) {
    for (const Case& cs : cases) {
      for (int mode = 0; mode < 3; ++mode) {  // max, average, average with count_include_pad
        const k::Pool2d p =
            geometry(cs.n, cs.c, cs.h, cs.w, cs.kern, cs.s, cs.pad, cs.dil, cs.ceil_mode, mode == 0, mode == 2);
        std::vector<float> xf(static_cast<size_t>(p.n * p.h * p.w * p.c));
        std::vector<uint16_t> x(xf.size());
        for (size_t i = 0; i < xf.size(); ++i) {
          float v = dist(rng);
          if (mode == 0 && i % 97 == 5) v = nan;  // max: NaN propagates to every window that holds one
          x[i] = to_16bit(dt, v);
          xf[i] = from_16bit(dt, x[i]);
        }
        const std::vector<float> want = reference(xf, p);
        const size_t ny = want.size();
        kilnrt::cuda::DeviceBuffer dx(gpu.dev, x.size() * 2), dys(gpu.dev, ny * 2);
        dx.copy_from_host_async(x.data(), x.size() * 2, gpu.stream.get());
        const auto s = static_cast<k::StreamT>(gpu.stream.get());
        ASSERT_EQ(k::pool2d_nhwc_scalar(dt, dx.data(), dys.data(), p, s), 0);
        std::vector<uint16_t> ys(ny);
        dys.copy_to_host_async(ys.data(), ny * 2, gpu.stream.get());
        for (int tx : {1, 2, 4}) {
          SCOPED_TRACE(::testing::Message()
                       << (dt == 1 ? "fp16" : "bf16") << " mode " << mode << " n" << cs.n << " c" << cs.c << " " << cs.h
                       << "x" << cs.w << " k" << cs.kern << " s" << cs.s << " p" << cs.pad << " d" << cs.dil
                       << (cs.ceil_mode ? " ceil" : "") << " tx " << tx << " out " << p.oh << "x" << p.ow);
          kilnrt::cuda::DeviceBuffer dy(gpu.dev, ny * 2);
          dy.memset_async(0xff, gpu.stream.get());
          ASSERT_TRUE(k::pool2d_nhwc_vec8_applies(dt, dx.data(), dy.data(), p));
          ASSERT_EQ(k::pool2d_nhwc_vec8(dt, dx.data(), dy.data(), p, tx, s), 0);
          std::vector<uint16_t> y(ny);
          dy.copy_to_host_async(y.data(), ny * 2, gpu.stream.get());
          gpu.stream.synchronize();
          int bad = 0;
          size_t nans = 0;
          for (size_t i = 0; i < ny && bad < 5; ++i) {
            const float got = from_16bit(dt, y[i]);
            const uint16_t w16 = to_16bit(dt, want[i]);
            const float ref = from_16bit(dt, w16);
            nans += std::isnan(ref);
            // Same float32 arithmetic, same rounding: equal to the reference, and bit-equal to the scalar kernel.
            const bool ok = std::isnan(ref) ? std::isnan(got) : got == ref;
            const float scalar = from_16bit(dt, ys[i]);
            const bool same_as_scalar = y[i] == ys[i] || (std::isnan(got) && std::isnan(scalar));
            if (!ok || !same_as_scalar) {
              ++bad;
              ADD_FAILURE() << "element " << i << ": vec8 " << got << ", reference " << ref << ", scalar bits " << ys[i]
                            << " vs " << y[i];
            }
          }
          if (mode == 0) EXPECT_GT(nans, 0u);  // the NaN case was exercised
        }
      }
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
