// Helpers for the tests of the tiled NHWC depthwise kernel (ops/nn/conv/cuda/nhwc_depthwise.h: its
// nhwc_depthwise_tile_test.cc, test_cuda_input_activation.cc): the launch geometry, FusedActivation codes in double,
// the double-precision reference, and one run of the kernel for every rows-per-thread variant compared with it.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/nn/conv/cuda/nhwc_depthwise.h"
#include "kernel16_test_util.h"

namespace kilnrt::cudatest {

// A depthwise convolution (groups = C = K) of a square ks x ks window, stride s, begin pads `pad`, end pads `pad_end`
// (-1: the same).
inline kilnrt::cuda::kernels::Conv2d depthwise_geometry(int64_t n, int64_t c, int64_t h, int64_t w, int ks, int s,
                                                        int pad, int pad_end = -1) {
  if (pad_end < 0) pad_end = pad;
  kilnrt::cuda::kernels::Conv2d p;
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

// FusedActivation codes (ops/nn/fused_conv/fused_conv.h) in double.
inline double activate(int act, double x, double a, double b) {
  switch (act) {
    case 1: return x < 0 ? 0 : x;
    case 2: return x < a ? a : (x > b ? b : x);
    case 3: return x < 0 ? a * x : x;
    case 4: return std::fmin(1.0, std::fmax(0.0, a * x + b));
    case 5: return x * std::fmin(1.0, std::fmax(0.0, x / 6 + 0.5));
    case 6: return 1 / (1 + std::exp(-x));
    case 7: return x / (1 + std::exp(-x));
    case 8: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

// The depthwise convolution of NHWC x with weights w [KH, KW, C] (values as double), double accumulation starting from
// bias[c] (null: 0), padding contributing 0, plus the residual z[i] (null: none), then activate(act, ., a, b).
inline std::vector<double> depthwise_reference(const kilnrt::cuda::kernels::Conv2d& p, const std::vector<double>& x,
                                               const std::vector<double>& w, const std::vector<double>* bias,
                                               const std::vector<double>* z, int act, double a, double b) {
  std::vector<double> ref(static_cast<size_t>(p.n * p.oh * p.ow * p.c));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox)
        for (int64_t c = 0; c < p.c; ++c) {
          double acc = bias ? (*bias)[c] : 0.0;
          for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx) {
              const int64_t iy = oy * p.sh - p.ph + ky, ix = ox * p.sw - p.pw + kx;
              if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
              acc += x[((n * p.h + iy) * p.w + ix) * p.c + c] * w[(ky * p.kw + kx) * p.c + c];
            }
          const size_t i = static_cast<size_t>(((n * p.oh + oy) * p.ow + ox) * p.c + c);
          if (z) acc += (*z)[i];
          ref[i] = activate(act, acc, a, b);
        }
  return ref;
}

// The 16-bit values of dtype code dt as doubles.
inline std::vector<double> doubles_16bit(int dt, const std::vector<uint16_t>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = from_16bit(dt, v[i]);
  return d;
}

// Random 16-bit operands (dtype code dt) of a depthwise layer of geometry p, drawn in this order: x [N, H, W, C],
// w [KH, KW, C], bias [C], z (the residual: the output's size).
struct DepthwiseOperands16 {
  std::vector<uint16_t> x, w, bias, z;
};
template <class Dist>
DepthwiseOperands16 random_depthwise_operands(int dt, const kilnrt::cuda::kernels::Conv2d& p, std::mt19937& rng,
                                              Dist& dist) {
  DepthwiseOperands16 o;
  o.x = random_16bit(dt, p.n * p.h * p.w * p.c, rng, dist);
  o.w = random_16bit(dt, int64_t(p.kh) * p.kw * p.c, rng, dist);
  o.bias = random_16bit(dt, p.c, rng, dist);
  o.z = random_16bit(dt, p.n * p.oh * p.ow * p.c, rng, dist);
  return o;
}

// Uploads the operands (16-bit, dtype code dt), runs the tiled kernel with epilogue e (its bias pointer set here
// when with_bias, its residual when with_residual) for rows per thread 0 (the kernel's choice), 1, 2 and 4, and
// expects every output within tol * (1 + |ref|) of ref (the first 5 misses reported). `what` names the case.
inline void expect_tile_kernel_matches(GpuStream& gpu, int dt, const kilnrt::cuda::kernels::Conv2d& p,
                                       const DepthwiseOperands16& o, kilnrt::cuda::kernels::DepthwiseEpilogue e,
                                       bool with_bias, bool with_residual, const std::vector<double>& ref, double tol,
                                       const std::string& what) {
  namespace k = kilnrt::cuda::kernels;
  const size_t ny = ref.size();
  auto& stream = gpu.stream;
  kilnrt::cuda::DeviceBuffer dx(gpu.dev, o.x.size() * 2), dw(gpu.dev, o.w.size() * 2), db(gpu.dev, o.bias.size() * 2),
      dz(gpu.dev, ny * 2), dy(gpu.dev, ny * 2);
  dx.copy_from_host_async(o.x.data(), o.x.size() * 2, stream.get());
  dw.copy_from_host_async(o.w.data(), o.w.size() * 2, stream.get());
  db.copy_from_host_async(o.bias.data(), o.bias.size() * 2, stream.get());
  dz.copy_from_host_async(o.z.data(), ny * 2, stream.get());
  e.bias = with_bias ? db.data() : nullptr;
  e.z = with_residual ? dz.data() : nullptr;
  for (int rows : {0, 1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << what << " rows " << rows);
    dy.memset_async(0xff, stream.get());
    ASSERT_EQ(k::depthwise_conv2d_nhwc_tile(dt, dx.data(), dw.data(), dy.data(), p, e,
                                            static_cast<k::StreamT>(stream.get()), rows),
              0);
    std::vector<uint16_t> y(ny);
    dy.copy_to_host_async(y.data(), ny * 2, stream.get());
    stream.synchronize();
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 5; ++i) {
      const double got = from_16bit(dt, y[i]);
      if (!(std::abs(got - ref[i]) <= tol * (1.0 + std::abs(ref[i])))) {
        ++bad;
        ADD_FAILURE() << "element " << i << ": got " << got << ", want " << ref[i];
      }
    }
  }
}

}  // namespace kilnrt::cudatest
