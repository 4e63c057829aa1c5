// Table-driven edge cases for the registry ops that no other unit test named (scripts/op_test_audit.py): the
// signal ops (windows of size 0 / 1 / symmetric vs periodic, STFT with one frame / complex input / bad steps,
// MelWeightMatrix shape and filter peaks), the quantized QLinearMatMul / QLinearConv (saturation at both ends,
// zero points, per-channel scales, padding), Scatter (its opset 9-10 name, negative axis, empty indices) and the
// preview-training Adam (step 0 without bias correction, weight decay after the step). References are written
// from the ONNX spec, element by element.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- windows ---------------------------------------------------------------------------------------------------
struct WindowCase {
  const char* op;
  int64_t size;
  int periodic;
  std::vector<double> expected;
};

// Fuzz finding (CI's onnx_build run, 2026-11-22): ReduceLogSum over int16 zeros is log(0) = -inf, which the integer
// result took by a float-to-int cast (UBSan: "-inf is outside the range of representable values of type 'short'");
// it now saturates (-inf -> the lowest value, NaN -> 0), like the other double-to-integer conversions.
TEST(OpEdgeReduce, FloatAccumulatorIntoIntegerResultSaturates) {
  const int16_t z[2] = {0, 0};
  Tensor x = Tensor::from_data(z, DType::kInt16, {2});
  Node r("ReduceLogSum", 18);
  r.i("keepdims", 0);
  Tensor y = run1(r.node, {&x});
  ASSERT_EQ(y.dtype(), DType::kInt16);
  EXPECT_EQ(y.data<int16_t>()[0], std::numeric_limits<int16_t>::lowest());
}

TEST(OpEdgeSignal, WindowsSizesAndSymmetry) {
  const double h0 = 4.0 / 46.0, h1 = 25.0 / 46.0;  // ONNX Hamming: alpha 25/46, beta 21/46
  const WindowCase cases[] = {
      {"HammingWindow", 0, 1, {}},
      {"HammingWindow", 5, 0, {h0, h1, 1.0, h1, h0}},
      {"HammingWindow", 4, 1, {h0, h1, 1.0, h1}},  // periodic N = symmetric N + 1 without its last point
      {"BlackmanWindow", 0, 0, {}},
      {"BlackmanWindow", 5, 0, {0.0, 0.34, 1.0, 0.34, 0.0}},
      {"BlackmanWindow", 4, 1, {0.0, 0.34, 1.0, 0.34}},
      {"HannWindow", 4, 0, {0.0, 0.75, 0.75, 0.0}},
      {"HannWindow", 1, 1, {0.0}},
  };
  for (const WindowCase& c : cases) {
    Node n(c.op, 1);
    n.i("periodic", c.periodic);
    Tensor size = i64_scalar(c.size);
    Tensor w = run1(n.node, {&size}, 17);
    EXPECT_EQ(w.dtype(), DType::kFloat32) << c.op;
    EXPECT_EQ(w.shape(), (Shape{c.size})) << c.op;
    expect_values(w, c.expected, 1e-6, std::string(c.op) + " size " + std::to_string(c.size));
  }
  // int32 size, float64 output; a negative size is an error naming the node.
  Node d("BlackmanWindow", 1);
  d.i("periodic", 0).i("output_datatype", 11);
  Tensor s32 = i32({5}, {});
  Tensor wd = run1(d.node, {&s32}, 17);
  EXPECT_EQ(wd.dtype(), DType::kFloat64);
  expect_values(wd, {0.0, 0.34, 1.0, 0.34, 0.0}, 1e-12);
  Tensor neg = i64_scalar(-3);
  expect_error_naming([&] { run1(d.node, {&neg}, 17); }, d.node, ErrorCode::kInvalidArgument, "negative");
  // Shape inference: the size known as a constant fixes the length; unknown leaves it symbolic.
  ir::TensorType st = ttype(DType::kInt64, {});
  Tensor seven = i64_scalar(7);
  EXPECT_EQ(infer(d.node, {&st}, {&seven}, 17)[0].shape[0].value, 7);
  EXPECT_FALSE(infer(d.node, {&st}, {}, 17)[0].shape[0].known());
}

// ---- STFT ------------------------------------------------------------------------------------------------------
// Naive STFT: frames of `flen` every `step`, times the window, DFT bins 0..bins-1.
std::vector<double> stft_ref(const std::vector<double>& x, int64_t batch, int64_t len, int64_t comp, int64_t step,
                             int64_t flen, const std::vector<double>& window, int64_t bins) {
  const int64_t frames = 1 + (len - flen) / step;
  std::vector<double> y;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < flen; ++t) {
          const size_t at = static_cast<size_t>((b * len + f * step + t) * comp);
          const double xr = x[at] * window[t], xi = comp == 2 ? x[at + 1] * window[t] : 0.0;
          const double a = -2 * kPi * static_cast<double>(k * t) / static_cast<double>(flen);
          re += xr * std::cos(a) - xi * std::sin(a);
          im += xr * std::sin(a) + xi * std::cos(a);
        }
        y.push_back(re);
        y.push_back(im);
      }
  return y;
}

struct StftCase {
  Shape signal;  // [batch, length, 1 or 2]
  int64_t step, flen;
  bool window, onesided;
};

TEST(OpEdgeSignal, StftFramesWindowsAndComplexInput) {
  const StftCase cases[] = {
      {{1, 8, 1}, 3, 8, false, true},  // the frame is the whole signal: one frame
      {{2, 10, 1}, 2, 4, true, true},  // even frame, onesided: 3 bins
      {{1, 9, 1}, 4, 5, true, false},  // odd frame, both sides
      {{1, 7, 2}, 1, 3, true, false},  // complex input
  };
  uint32_t seed = 3;
  for (const StftCase& c : cases) {
    Tensor x = ramp(c.signal, -1.f, 1.f, seed++);
    Tensor step = i64_scalar(c.step), flen = i64_scalar(c.flen);
    std::vector<float> wv;
    for (int64_t t = 0; t < c.flen; ++t) wv.push_back(0.5f + 0.1f * static_cast<float>(t));
    Tensor window = f32(wv);
    Node n("STFT", 4);
    n.i("onesided", c.onesided);
    Tensor y = run1(n.node, {&x, &step, c.window ? &window : nullptr, &flen}, 17);
    const int64_t bins = c.onesided ? c.flen / 2 + 1 : c.flen;
    const int64_t frames = 1 + (c.signal[1] - c.flen) / c.step;
    EXPECT_EQ(y.shape(), (Shape{c.signal[0], frames, bins, 2}));
    std::vector<double> w(static_cast<size_t>(c.flen), 1.0);
    if (c.window) w.assign(wv.begin(), wv.end());
    expect_values(y, stft_ref(values(x), c.signal[0], c.signal[1], c.signal[2], c.step, c.flen, w, bins), 1e-4,
                  "STFT " + shape_to_string(c.signal));
  }
  // frame_step 0 and a frame longer than the signal are errors naming the node.
  Tensor x = ramp({1, 4, 1});
  Tensor zero = i64_scalar(0), two = i64_scalar(2), five = i64_scalar(5);
  Node n("STFT", 4, 1, "stft_bad");
  expect_error_naming([&] { run1(n.node, {&x, &zero, nullptr, &two}, 17); }, n.node, ErrorCode::kInvalidArgument);
  expect_error_naming([&] { run1(n.node, {&x, &two, nullptr, &five}, 17); }, n.node, ErrorCode::kInvalidArgument);
}

// ---- MelWeightMatrix -------------------------------------------------------------------------------------------
TEST(OpEdgeSignal, MelWeightMatrixShapeAndTriangles) {
  struct MelCase {
    int64_t mel, dft, rate;
    float lo, hi;
  };
  const MelCase cases[] = {{1, 8, 8000, 0.f, 4000.f}, {4, 32, 16000, 100.f, 7000.f}, {8, 64, 8000, 20.f, 3999.f}};
  for (const MelCase& c : cases) {
    Tensor m = i64_scalar(c.mel), d = i64_scalar(c.dft), r = i64_scalar(c.rate);
    Tensor lo = f32({c.lo}, {}), hi = f32({c.hi}, {});
    Node n("MelWeightMatrix", 5);
    Tensor w = run1(n.node, {&m, &d, &r, &lo, &hi}, 17);
    const int64_t spec = c.dft / 2 + 1;
    ASSERT_EQ(w.shape(), (Shape{spec, c.mel}));
    // Independent edges: mel scale 2595 log10(1 + f/700), mel+2 points, floor((dft + 1) * hz / rate).
    const double lo_mel = 2595 * std::log10(1 + c.lo / 700.0), hi_mel = 2595 * std::log10(1 + c.hi / 700.0);
    std::vector<int64_t> edge;
    for (int64_t i = 0; i < c.mel + 2; ++i) {
      const double mel = lo_mel + static_cast<double>(i) * (hi_mel - lo_mel) / static_cast<double>(c.mel + 2);
      const double hz = 700 * (std::pow(10.0, mel / 2595) - 1);
      edge.push_back(static_cast<int64_t>(std::floor(static_cast<double>(c.dft + 1) * hz / c.rate)));
    }
    const std::vector<double> v = values(w);
    for (int64_t i = 0; i < c.mel; ++i) {
      for (int64_t j = 0; j < spec; ++j) {
        const double got = v[static_cast<size_t>(j * c.mel + i)];
        double want = 0;
        const int64_t l = edge[i], ce = edge[i + 1], h = edge[i + 2];
        if (j >= l && j <= ce) want = ce == l ? (j == ce ? 1.0 : 0.0) : static_cast<double>(j - l) / (ce - l);
        if (j >= ce && j < h) want = static_cast<double>(h - j) / (h - ce);
        EXPECT_NEAR(got, want, 1e-6) << "mel " << i << " bin " << j;
      }
      EXPECT_NEAR(v[static_cast<size_t>(edge[i + 1] * c.mel + i)], 1.0, 1e-6) << "peak of filter " << i;
    }
  }
  Node dbl("MelWeightMatrix", 5);
  dbl.i("output_datatype", 11);
  Tensor m = i64_scalar(2), d = i64_scalar(16), r = i64_scalar(8000);
  Tensor lo = f32({0.f}, {}), hi = f32({4000.f}, {});
  EXPECT_EQ(run1(dbl.node, {&m, &d, &r, &lo, &hi}, 17).dtype(), DType::kFloat64);
}

// ---- QLinearMatMul / QLinearConv -------------------------------------------------------------------------------
double requantize(double acc, double scale, double zp, DType t) {
  const double lo = t == DType::kInt8 ? -128 : 0, hi = t == DType::kInt8 ? 127 : 255;
  return std::min(hi, std::max(lo, std::nearbyint(static_cast<float>(acc * scale)) + zp));
}

Tensor q8(DType t, const std::vector<int>& v, const Shape& s) {
  if (t == DType::kInt8) return i8(std::vector<int8_t>(v.begin(), v.end()), s);
  return u8(std::vector<uint8_t>(v.begin(), v.end()), s);
}

struct QMatMulCase {
  DType t;
  std::vector<int> a, b;
  int a_zp, b_zp, y_zp;
  float a_scale, b_scale, y_scale;
};

TEST(OpEdgeQuant, QLinearMatMulZeroPointsAndSaturation) {
  const QMatMulCase cases[] = {
      // uint8: large products saturate at 255, negative ones at 0.
      {DType::kUInt8, {255, 0, 128, 10, 250, 128}, {255, 0, 0, 255, 128, 128}, 128, 128, 128, 0.5f, 0.5f, 0.25f},
      // int8 extremes: -128 * -128 products saturate at 127; zero points shift.
      {DType::kInt8, {-128, 127, 0, -128, -1, 1}, {-128, 127, -128, 0, 5, -5}, 0, 0, -3, 0.1f, 0.2f, 0.05f},
      // Scales that land near .5: rounding is to nearest even.
      {DType::kUInt8, {1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1}, 0, 0, 10, 1.f, 1.f, 4.f},
  };
  for (const QMatMulCase& c : cases) {
    Tensor a = q8(c.t, c.a, {2, 3}), b = q8(c.t, c.b, {3, 2});
    Tensor as = f32({c.a_scale}, {}), bs = f32({c.b_scale}, {}), ys = f32({c.y_scale}, {});
    Tensor az = q8(c.t, {c.a_zp}, {}), bz = q8(c.t, {c.b_zp}, {}), yz = q8(c.t, {c.y_zp}, {});
    Node n("QLinearMatMul", 8);
    Tensor y = run1(n.node, {&a, &as, &az, &b, &bs, &bz, &ys, &yz}, 13);
    ASSERT_EQ(y.dtype(), c.t);
    ASSERT_EQ(y.shape(), (Shape{2, 2}));
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double acc = 0;
        for (int k = 0; k < 3; ++k) acc += double(c.a[i * 3 + k] - c.a_zp) * double(c.b[k * 2 + j] - c.b_zp);
        want.push_back(requantize(acc, double(c.a_scale) * c.b_scale / c.y_scale, c.y_zp, c.t));
      }
    expect_values(y, want, 0, "QLinearMatMul " + std::string(dtype_name(c.t)));
  }
}

TEST(OpEdgeQuant, QLinearConvPerChannelBiasPadding) {
  // x [1, 1, 3, 3] uint8 (zero point 100), w [2, 1, 2, 2] (per-channel scales), pads 1: border windows see the
  // zero point, not 0.
  const std::vector<int> xv = {100, 110, 255, 0, 100, 90, 200, 50, 100};
  const std::vector<int> wv = {1, 2, 3, 4, 255, 0, 128, 127};
  Tensor x = q8(DType::kUInt8, xv, {1, 1, 3, 3}), w = q8(DType::kUInt8, wv, {2, 1, 2, 2});
  Tensor xs = f32({0.05f}, {}), xz = q8(DType::kUInt8, {100}, {});
  Tensor ws = f32({2.0f, 0.01f}, {2}), wz = q8(DType::kUInt8, {0, 128}, {2});
  Tensor ys = f32({0.1f}, {}), yz = q8(DType::kUInt8, {20}, {});
  std::vector<int32_t> bias_v = {-200, 1000};
  Tensor bias = i32(bias_v, {2});
  Node n("QLinearConv", 9);
  n.ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1});
  Tensor y = run1(n.node, {&x, &xs, &xz, &w, &ws, &wz, &ys, &yz, &bias}, 13);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 4}));
  std::vector<double> want;
  const int wzs[2] = {0, 128};
  const float wss[2] = {2.0f, 0.01f};
  for (int m = 0; m < 2; ++m)
    for (int oh = 0; oh < 4; ++oh)
      for (int ow = 0; ow < 4; ++ow) {
        double acc = bias_v[m];
        for (int kh = 0; kh < 2; ++kh)
          for (int kw = 0; kw < 2; ++kw) {
            const int ih = oh - 1 + kh, iw = ow - 1 + kw;
            if (ih < 0 || ih >= 3 || iw < 0 || iw >= 3) continue;
            acc += double(xv[ih * 3 + iw] - 100) * double(wv[m * 4 + kh * 2 + kw] - wzs[m]);
          }
        want.push_back(requantize(acc, 0.05 * double(wss[m]) / 0.1, 20, DType::kUInt8));
      }
  expect_values(y, want, 0, "QLinearConv");
  const std::vector<double> got = values(y);
  EXPECT_NE(std::find(got.begin(), got.end(), 255.0), got.end()) << "the case should saturate high somewhere";
  EXPECT_NE(std::find(got.begin(), got.end(), 0.0), got.end()) << "the case should saturate low somewhere";
}

// ---- Scatter (opset 9-10 name of ScatterElements) ---------------------------------------------------------------
TEST(OpEdgeIndex, ScatterOldNameNegativeAxisAndEmptyIndices) {
  Tensor data = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = i64({2, 0, 1, 2}, {2, 2});
  Tensor upd = f32({10, 20, 30, 40}, {2, 2});
  Node last("Scatter", 3);
  last.i("axis", -1);
  expect_values(run1(last.node, {&data, &idx, &upd}, 10), {20, 2, 10, 4, 30, 40});
  Node first("Scatter", 3);  // axis 0 (default)
  Tensor idx0 = i64({1, 0, 0}, {1, 3});
  Tensor upd0 = f32({7, 8, 9}, {1, 3});
  expect_values(run1(first.node, {&data, &idx0, &upd0}, 9), {1, 8, 9, 7, 5, 6});
  // Empty indices: a copy of data; int64 extremes in data survive.
  Tensor big = i64({INT64_MIN, INT64_MAX, 0}, {3});
  Tensor none = i64({}, {0});
  Tensor no_upd = i64({}, {0});
  Tensor same = run1(first.node, {&big, &none, &no_upd}, 10);
  EXPECT_EQ(ints_of(same), (std::vector<int64_t>{INT64_MIN, INT64_MAX, 0}));
  // Out-of-range index: an error naming the node.
  Tensor bad = i64({3}, {1});
  Tensor one = i64({5}, {1});
  Node b("Scatter", 3, 1, "scatter_oob");
  expect_error_naming([&] { run1(b.node, {&big, &bad, &one}, 10); }, b.node, ErrorCode::kInvalidArgument);
}

// ---- Adam (ai.onnx.preview.training) ---------------------------------------------------------------------------
struct AdamCase {
  int64_t t;
  float alpha, beta, eps, norm, norm_post;
};

TEST(OpEdgeTraining, AdamStepZeroAndDecay) {
  const AdamCase cases[] = {{0, 0.9f, 0.999f, 1e-6f, 0.f, 0.f},     // t = 0: no bias correction
                            {1, 0.9f, 0.999f, 1e-6f, 0.f, 0.f},     // first corrected step
                            {5, 0.5f, 0.75f, 1e-2f, 0.1f, 0.25f}};  // L2 term and decay after the step
  for (const AdamCase& c : cases) {
    Node n("Adam", 6, 3);
    n.node.domain = "ai.onnx.preview.training";
    n.f("alpha", c.alpha)
        .f("beta", c.beta)
        .f("epsilon", c.eps)
        .f("norm_coefficient", c.norm)
        .f("norm_coefficient_post", c.norm_post);
    const std::vector<double> x = {1.0, -2.0, 0.0}, g = {0.5, 0.0, -1e3}, v = {0.1, 0.0, 0.0}, h = {0.01, 0.0, 4.0};
    Tensor r = f32({0.1f}, {}), t = i64_scalar(c.t);
    Tensor xt = f64(x, {3}), gt = f64(g, {3}), vt = f64(v, {3}), ht = f64(h, {3});
    std::vector<Tensor> out = run(n.node, {&r, &t, &xt, &gt, &vt, &ht}, 1);
    std::vector<double> xw, vw, hw;
    const double a = c.alpha, b = c.beta, td = static_cast<double>(c.t);
    const double lr = c.t > 0 ? 0.1f * std::sqrt(1 - std::pow(b, td)) / (1 - std::pow(a, td)) : 0.1f;
    for (size_t k = 0; k < 3; ++k) {
      const double gr = double(c.norm) * x[k] + g[k];
      const double vn = a * v[k] + (1 - a) * gr, hn = b * h[k] + (1 - b) * gr * gr;
      vw.push_back(vn);
      hw.push_back(hn);
      xw.push_back((1 - double(c.norm_post)) * (x[k] - lr * vn / (std::sqrt(hn) + double(c.eps))));
    }
    expect_values(out[0], xw, 1e-9, "X t=" + std::to_string(c.t));
    expect_values(out[1], vw, 1e-9, "V");
    expect_values(out[2], hw, 1e-9, "H");
  }
}

}  // namespace
}  // namespace kilnrt::ops::optest
