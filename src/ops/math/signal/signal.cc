// Signal ops (opset 17): HannWindow / HammingWindow / BlackmanWindow, DFT (forward / inverse, onesided, the inverse
// real FFT (inverse + onesided), dft_length, any axis; real [.., 1] or complex [.., 2] input), STFT (frame_step,
// window, frame_length, onesided) and MelWeightMatrix. Naive O(n^2) transforms in double: reference kernels, not fast
// ones.
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

DType output_dtype(const ir::Node& node, int64_t dflt) {
  const int64_t t = node.attr_int("output_datatype", dflt);
  KILNRT_CHECK(dtype_is_valid(static_cast<int32_t>(t)), kUnsupported, node.describe(),
               "output_datatype " << t << " is not supported");
  return static_cast<DType>(t);
}

int64_t scalar_int(const Tensor& t) { return tensor_to_int64s(t).at(0); }

template <int Kind>
void window_cpu(CpuContext& ctx) {
  const int64_t n = scalar_int(ctx.input(0));
  KILNRT_CHECK(n >= 0, kInvalidArgument, ctx.node.describe(), "negative window size " << n);
  const bool periodic = ctx.node.attr_int("periodic", 1) != 0;
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double a = den > 0 ? 2 * kPi * static_cast<double>(i) / den : 0.0;
    if (Kind == 0)
      w[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(a);
    else if (Kind == 1)
      w[static_cast<size_t>(i)] = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
    else
      w[static_cast<size_t>(i)] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
  }
  ctx.outputs[0] = tensor_from_doubles(w, output_dtype(ctx.node, 1), {n});
}

void infer_window(ShapeContext& ctx) {
  const Tensor* v = ctx.value(0);
  ctx.set_output(0, output_dtype(ctx.node, 1), {v ? ir::Dim(scalar_int(*v)) : ir::Dim()});
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "HannWindow",
                            17,
                            1000,
                            infer_window,
                            window_cpu<0>,
                            {DType::kInt64, DType::kInt32},
                            "Hann window of the given size (periodic or symmetric)"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "HammingWindow",
                            17,
                            1000,
                            infer_window,
                            window_cpu<1>,
                            {DType::kInt64, DType::kInt32},
                            "Hamming window (alpha 25/46)"});
KILNRT_REGISTER_OP(OpSchema{
    "", "BlackmanWindow", 17, 1000, infer_window, window_cpu<2>, {DType::kInt64, DType::kInt32}, "Blackman window"});

// One DFT of n complex points (re, im) -> out_len bins.
void dft1(const std::vector<double>& re, const std::vector<double>& im, int64_t out_len, bool inverse,
          double* out /* 2*out_len */) {
  const auto n = static_cast<int64_t>(re.size());
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < out_len; ++k) {
    double sr = 0, si = 0;
    for (int64_t t = 0; t < n; ++t) {
      const double a = sign * 2 * kPi * static_cast<double>((k * t) % std::max<int64_t>(n, 1)) / static_cast<double>(n);
      const double c = std::cos(a), s = std::sin(a);
      sr += re[static_cast<size_t>(t)] * c - im[static_cast<size_t>(t)] * s;
      si += re[static_cast<size_t>(t)] * s + im[static_cast<size_t>(t)] * c;
    }
    if (inverse) {
      sr /= static_cast<double>(n);
      si /= static_cast<double>(n);
    }
    out[2 * k] = sr;
    out[2 * k + 1] = si;
  }
}

// DFT's axis. Opset 20 moved it to input 2 (default -2), counted over all r dims with the last (real / complex) one
// excluded: [-r, -2] or [0, r - 2]. Before: the attribute (default 1), normalised over the first r - 1 dims.
int64_t dft_axis(const ir::Node& node, int64_t opset, const Tensor* axis_input, int64_t r) {
  if (opset < 20) return normalize_axis(node.attr_int("axis", 1), r - 1, node);
  const int64_t a = axis_input ? scalar_int(*axis_input) : -2;
  KILNRT_CHECK(a >= -r && a <= r - 2, kInvalidArgument, node.describe(),
               "axis " << a << " is out of range [" << -r << ", " << r - 2 << "] for an input of rank " << r);
  return a < 0 ? a + r : a;
}

void dft_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& xt = ctx.input(0);
  const Shape& s = xt.shape();
  KILNRT_CHECK(xt.rank() >= 2 && (s.back() == 1 || s.back() == 2), kInvalidArgument, node.describe(),
               "input must end in a dimension of 1 (real) or 2 (complex)");
  const int64_t axis = dft_axis(node, ctx.opset, ctx.has_input(2) ? &ctx.input(2) : nullptr, xt.rank());
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  const int64_t len = s[static_cast<size_t>(axis)];
  // inverse + onesided (the inverse real FFT): the input holds bins 0 .. n/2 of a Hermitian spectrum of length
  // n = dft_length or 2 * (bins - 1); the others are conj(X[n - k]); the output is the real signal [.., 1].
  const bool irfft = inverse && onesided;
  const int64_t n = ctx.has_input(1) ? scalar_int(ctx.input(1)) : irfft ? 2 * (len - 1) : len;
  KILNRT_CHECK(n >= 1, kInvalidArgument, node.describe(), "DFT length " << n << " must be positive");
  const int64_t out_len = irfft ? n : onesided ? n / 2 + 1 : n;
  const int64_t comp = s.back();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d + 1 < s.size(); ++d) inner *= s[d];
  const std::vector<double> x = tensor_to_doubles(xt, node);
  Shape out_shape = s;
  out_shape[static_cast<size_t>(axis)] = out_len;
  const int64_t out_comp = irfft ? 1 : 2;
  out_shape.back() = out_comp;
  std::vector<double> y(static_cast<size_t>(outer * out_len * inner * out_comp));
  std::vector<double> re(static_cast<size_t>(n)), im(static_cast<size_t>(n)), tmp(static_cast<size_t>(2 * out_len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t t = 0; t < n; ++t) {
        // irfft: bins past the stored half are the conjugates of their mirror images.
        const bool mirror = irfft && t >= len;
        const int64_t src = mirror ? n - t : t;
        const bool in = src < len;
        const size_t base = static_cast<size_t>(((o * len + src) * inner + i) * comp);
        re[static_cast<size_t>(t)] = in ? x[base] : 0.0;
        const double imag = in && comp == 2 ? x[base + 1] : 0.0;
        im[static_cast<size_t>(t)] = mirror ? -imag : imag;
      }
      dft1(re, im, out_len, inverse, tmp.data());
      for (int64_t k = 0; k < out_len; ++k) {
        const size_t base = static_cast<size_t>(((o * out_len + k) * inner + i) * out_comp);
        y[base] = tmp[static_cast<size_t>(2 * k)];
        if (out_comp == 2) y[base + 1] = tmp[static_cast<size_t>(2 * k + 1)];
      }
    }
  ctx.outputs[0] = tensor_from_doubles(y, xt.dtype(), out_shape);
}

void infer_dft(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  ir::SymShape out = x.shape;
  const int64_t r = static_cast<int64_t>(out.size());
  if (ctx.opset >= 20 && ctx.has_input(2) && !ctx.value(2)) {
    // Axis not known before the run: the transformed dim is unknown, the other dims keep their size unless the
    // length changes (dft_length / onesided), then every candidate dim is unknown.
    const bool same_len = !ctx.has_input(1) && ctx.node.attr_int("onesided", 0) == 0;
    for (int64_t d = 0; d + 1 < r && !same_len; ++d) out[static_cast<size_t>(d)] = ir::Dim();
    const bool irfft = ctx.node.attr_int("onesided", 0) != 0 && ctx.node.attr_int("inverse", 0) != 0;
    if (r > 0) out.back() = ir::Dim(irfft ? 1 : 2);
    ctx.set_output(0, x.dtype, out);
    return;
  }
  const int64_t axis = dft_axis(ctx.node, ctx.opset, ctx.has_input(2) ? ctx.value(2) : nullptr, r);
  ir::Dim n = out[static_cast<size_t>(axis)];
  const bool onesided = ctx.node.attr_int("onesided", 0) != 0;
  const bool irfft = onesided && ctx.node.attr_int("inverse", 0) != 0;
  if (ctx.has_input(1))
    n = ctx.value(1) ? ir::Dim(scalar_int(*ctx.value(1))) : ir::Dim();
  else if (irfft)
    n = n.known() ? ir::Dim(2 * (n.value - 1)) : ir::Dim();
  if (onesided && !irfft) n = n.known() ? ir::Dim(n.value / 2 + 1) : ir::Dim();
  out[static_cast<size_t>(axis)] = n;
  out.back() = ir::Dim(irfft ? 1 : 2);
  ctx.set_output(0, x.dtype, out);
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "DFT",
                            17,
                            1000,
                            infer_dft,
                            dft_cpu,
                            {DType::kFloat32, DType::kFloat64},
                            "discrete Fourier transform along an axis (inverse, onesided, dft_length)"});

void stft_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& xt = ctx.input(0);
  const Shape& s = xt.shape();
  KILNRT_CHECK(xt.rank() == 3, kInvalidArgument, node.describe(), "signal must be [batch, length, 1 or 2]");
  const int64_t B = s[0], L = s[1], comp = s[2];
  const int64_t step = scalar_int(ctx.input(1));
  std::vector<double> window;
  if (ctx.has_input(2)) window = tensor_to_doubles(ctx.input(2), node);
  int64_t flen = ctx.has_input(3) ? scalar_int(ctx.input(3)) : static_cast<int64_t>(window.size());
  KILNRT_CHECK(flen > 0 && step > 0 && flen <= L, kInvalidArgument, node.describe(),
               "frame_length " << flen << " / frame_step " << step << " do not fit a signal of " << L);
  if (window.empty()) window.assign(static_cast<size_t>(flen), 1.0);
  const bool onesided = node.attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (L - flen) / step;
  const int64_t bins = onesided ? flen / 2 + 1 : flen;
  const std::vector<double> x = tensor_to_doubles(xt, node);
  std::vector<double> y(static_cast<size_t>(B * frames * bins * 2));
  std::vector<double> re(static_cast<size_t>(flen)), im(static_cast<size_t>(flen));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < flen; ++t) {
        const size_t base = static_cast<size_t>((b * L + f * step + t) * comp);
        re[static_cast<size_t>(t)] = x[base] * window[static_cast<size_t>(t)];
        im[static_cast<size_t>(t)] = comp == 2 ? x[base + 1] * window[static_cast<size_t>(t)] : 0.0;
      }
      dft1(re, im, bins, false, y.data() + (b * frames + f) * bins * 2);
    }
  ctx.outputs[0] = tensor_from_doubles(y, xt.dtype(), {B, frames, bins, 2});
}

void infer_stft(ShapeContext& ctx) {
  // Known dims where the signal's shape and frame_step / frame_length (or the window's length) are known.
  const ir::TensorType& x = ctx.input(0);
  ir::Dim b, frames, bins;
  const bool x3 = x.has_shape && x.shape.size() == 3;
  if (x3) b = x.shape[0];
  int64_t flen = -1;
  if (ctx.has_input(3)) {
    if (const Tensor* v = ctx.value(3)) flen = scalar_int(*v);
  } else if (ctx.has_input(2) && ctx.input(2).has_shape && ctx.input(2).shape.size() == 1 &&
             ctx.input(2).shape[0].known()) {
    flen = ctx.input(2).shape[0].value;
  }
  if (flen > 0) {
    bins = ir::Dim(ctx.node.attr_int("onesided", 1) != 0 ? flen / 2 + 1 : flen);
    const Tensor* step = ctx.value(1);
    if (step && x3 && x.shape[1].known()) {
      const int64_t s = scalar_int(*step), len = x.shape[1].value;
      if (s > 0 && flen <= len) frames = ir::Dim(1 + (len - flen) / s);
    }
  }
  ctx.set_output(0, x.dtype, {b, frames, bins, ir::Dim(2)});
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "STFT",
                            17,
                            1000,
                            infer_stft,
                            stft_cpu,
                            {DType::kFloat32, DType::kFloat64},
                            "short-time Fourier transform (frame_step, window, frame_length, onesided)"});

// MelWeightMatrix, as ONNX's reference computes it (integer bin edges, triangular filters).
void mel_cpu(CpuContext& ctx) {
  const int64_t mel_bins = scalar_int(ctx.input(0)), dft_len = scalar_int(ctx.input(1));
  const int64_t rate = scalar_int(ctx.input(2));
  const double lo = tensor_to_doubles(ctx.input(3), ctx.node).at(0),
               hi = tensor_to_doubles(ctx.input(4), ctx.node).at(0);
  KILNRT_CHECK(mel_bins >= 0 && mel_bins <= (int64_t(1) << 20) && dft_len > 0 && dft_len <= (int64_t(1) << 24) &&
                   rate > 0 && std::isfinite(lo) && std::isfinite(hi) && lo > -700 && hi > -700,
               kInvalidArgument, ctx.node.describe(),
               "MelWeightMatrix: num_mel_bins " << mel_bins << ", dft_length " << dft_len << ", sample_rate " << rate
                                                << ", frequencies " << lo << ".." << hi << " are out of range");
  const int64_t spec_bins = dft_len / 2 + 1;
  const double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
  const double step = (hi_mel - lo_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595) - 1);
    const double edge = std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate));
    KILNRT_CHECK(std::isfinite(edge) && std::fabs(edge) < 1e15, kInvalidArgument, ctx.node.describe(),
                 "MelWeightMatrix: bin edge " << edge << " is out of range");
    edges[static_cast<size_t>(i)] = static_cast<int64_t>(edge);
  }
  std::vector<double> w(static_cast<size_t>(spec_bins * mel_bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    KILNRT_CHECK(j >= 0 && j < spec_bins, kInvalidArgument, ctx.node.describe(), "mel bin edge out of range");
    return w[static_cast<size_t>(j * mel_bins + i)];
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t l = edges[static_cast<size_t>(i)], c = edges[static_cast<size_t>(i + 1)];
    const int64_t h = edges[static_cast<size_t>(i + 2)];
    if (c - l == 0)
      at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    if (h - c > 0)
      for (int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  ctx.outputs[0] = tensor_from_doubles(w, output_dtype(ctx.node, 1), {spec_bins, mel_bins});
}

void infer_mel(ShapeContext& ctx) {
  const Tensor* m = ctx.value(0);
  const Tensor* d = ctx.value(1);
  ctx.set_output(0, output_dtype(ctx.node, 1),
                 {d ? ir::Dim(scalar_int(*d) / 2 + 1) : ir::Dim(), m ? ir::Dim(scalar_int(*m)) : ir::Dim()});
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "MelWeightMatrix",
                            17,
                            1000,
                            infer_mel,
                            mel_cpu,
                            {DType::kInt64, DType::kInt32},
                            "mel filter bank matrix [dft_length/2+1, num_mel_bins]"});

}  // namespace
}  // namespace kilnrt::ops
