// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): nearest (every nearest_mode), linear (N-linear) and
// cubic (cubic_coeff_a, exclude_outside) over any number of axes, with every coordinate_transformation_mode
// (half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nearest,
// tf_crop_and_resize + extrapolation_value), scales or sizes, axes and keep_aspect_ratio_policy (18+).
// Interpolation is separable: each output coordinate of each axis gets a short list of (input index, weight) taps,
// computed once per axis as ONNX's reference does (edge-padded neighbours); values are computed in double.
// antialias=1 (opset 18+) for linear and cubic: the filter widened by 1/scale when downsampling.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // opset 18+, linear / cubic: the kernel widened by 1/scale when downsampling
  double extrapolation = 0.0;
  std::string keep_aspect = "stretch";
  std::vector<int64_t> axes;
};

ResizeAttrs read_attrs(const ir::Node& node, int64_t opset) {
  ResizeAttrs a;
  a.mode = node.attr_string("mode", "nearest");
  if (a.mode == "bilinear" || a.mode == "trilinear") a.mode = "linear";  // Upsample-7 spellings
  KILNRT_CHECK(a.mode == "nearest" || a.mode == "linear" || a.mode == "cubic", kInvalidModel, node.describe(),
               "unknown mode '" << a.mode << "'");
  if (node.op_type == "Upsample" || opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    a.coord = "asymmetric";
    a.nearest_mode = "floor";
    KILNRT_CHECK(a.mode != "cubic", kInvalidModel, node.describe(), "mode 'cubic' needs opset 11");
  } else {
    a.coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest_mode = node.attr_string("nearest_mode", "round_prefer_floor");
    a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
    a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = node.attr_float("extrapolation_value", 0.f);
  }
  if (opset >= 18 && node.op_type == "Resize") {
    a.antialias = node.attr_int("antialias", 0) != 0;
    KILNRT_CHECK(!a.antialias || a.mode != "nearest", kUnsupported, node.describe(),
                 "antialias=1 applies to linear and cubic modes, not 'nearest'");
    a.keep_aspect = node.attr_string("keep_aspect_ratio_policy", "stretch");
    a.axes = node.attr_ints("axes", std::vector<int64_t>{});
  }
  static const char* const kCoords[] = {"half_pixel",        "half_pixel_symmetric", "pytorch_half_pixel",
                                        "align_corners",     "asymmetric",           "tf_half_pixel_for_nearest",
                                        "tf_crop_and_resize"};
  KILNRT_CHECK(std::find(std::begin(kCoords), std::end(kCoords), a.coord) != std::end(kCoords), kInvalidModel,
               node.describe(), "unknown coordinate_transformation_mode '" << a.coord << "'");
  static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  KILNRT_CHECK(std::find(std::begin(kNearest), std::end(kNearest), a.nearest_mode) != std::end(kNearest), kInvalidModel,
               node.describe(), "unknown nearest_mode '" << a.nearest_mode << "'");
  KILNRT_CHECK(a.keep_aspect == "stretch" || a.keep_aspect == "not_larger" || a.keep_aspect == "not_smaller",
               kInvalidModel, node.describe(), "unknown keep_aspect_ratio_policy '" << a.keep_aspect << "'");
  return a;
}

// Input positions of the optional inputs at this opset.
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs input_positions(const ir::Node& node, int64_t opset) {
  if (node.op_type == "Upsample") return {-1, opset >= 9 ? 1 : -1, -1};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

// Output shape, per-axis scales and (for tf_crop_and_resize) roi, from the scales/sizes values.
struct ResizePlan {
  Shape out;
  std::vector<double> scale;
  std::vector<double> roi_start, roi_end;
};

ResizePlan plan_resize(const ir::Node& node, const ResizeAttrs& a, const Shape& in, const Tensor* roi,
                       const Tensor* scales, const Tensor* sizes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = a.axes;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (auto& ax : axes) ax = normalize_axis(ax, rank, node);
  ResizePlan p;
  p.out = in;
  p.scale.assign(static_cast<size_t>(rank), 1.0);
  const bool have_scales = scales && scales->numel() > 0;
  const bool have_sizes = sizes && sizes->numel() > 0;
  KILNRT_CHECK(have_scales != have_sizes, kInvalidModel, node.describe(),
               "exactly one of 'scales' and 'sizes' must be given (non-empty)");
  if (have_scales) {
    std::vector<double> s = tensor_to_doubles(*scales, node);
    KILNRT_CHECK(s.size() == axes.size(), kInvalidArgument, node.describe(),
                 "scales has " << s.size() << " values for " << axes.size() << " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      KILNRT_CHECK(s[i] > 0, kInvalidArgument, node.describe(), "scales must be positive, got " << s[i]);
      const auto ax = static_cast<size_t>(axes[i]);
      // float32 scales as given, product floored (ONNX's reference: (scales * shape).astype(int)).
      const double sc = static_cast<float>(s[i]);
      p.scale[ax] = sc;
      p.out[ax] = static_cast<int64_t>(std::floor(sc * static_cast<double>(in[ax]) + 1e-9));
    }
  } else {
    std::vector<int64_t> sz = tensor_to_int64s(*sizes);
    KILNRT_CHECK(sz.size() == axes.size(), kInvalidArgument, node.describe(),
                 "sizes has " << sz.size() << " values for " << axes.size() << " axes");
    if (a.keep_aspect != "stretch") {
      double s = a.keep_aspect == "not_larger" ? 1e300 : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const double r = static_cast<double>(sz[i]) / static_cast<double>(in[static_cast<size_t>(axes[i])]);
        s = a.keep_aspect == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        const auto ax = static_cast<size_t>(axes[i]);
        p.scale[ax] = s;
        p.out[ax] = static_cast<int64_t>(std::round(s * static_cast<double>(in[ax])));
      }
    } else {
      for (size_t i = 0; i < axes.size(); ++i) {
        const auto ax = static_cast<size_t>(axes[i]);
        KILNRT_CHECK(sz[i] >= 0, kInvalidArgument, node.describe(), "negative size " << sz[i]);
        p.out[ax] = sz[i];
        p.scale[ax] = in[ax] > 0 ? static_cast<double>(sz[i]) / static_cast<double>(in[ax]) : 1.0;
      }
    }
  }
  p.roi_start.assign(static_cast<size_t>(rank), 0.0);
  p.roi_end.assign(static_cast<size_t>(rank), 1.0);
  if (a.coord == "tf_crop_and_resize" && roi) {  // the shape function passes no roi (shapes do not need it)
    KILNRT_CHECK(roi->numel() == static_cast<int64_t>(2 * axes.size()), kInvalidArgument, node.describe(),
                 "tf_crop_and_resize needs roi with 2 values per axis");
    std::vector<double> r = tensor_to_doubles(*roi, node);
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi_start[static_cast<size_t>(axes[i])] = r[i];
      p.roi_end[static_cast<size_t>(axes[i])] = r[i + axes.size()];
    }
  }
  return p;
}

struct Tap {
  int64_t index;
  double weight;
};
struct AxisTaps {
  std::vector<std::vector<Tap>> taps;  // per output coordinate
  std::vector<char> outside;           // tf_crop_and_resize: coordinate outside the input -> extrapolation value
};

// length_resized is scale * length_original (not the floored output size), as in ONNX's reference
// (onnx/backend/test/case/node/resize.py): it differs from the output size only for scales that do not divide.
double original_coord(const ResizeAttrs& a, double x, double scale, int64_t in, int64_t out, double rs, double re) {
  const double len_in = static_cast<double>(in), len_out = scale * len_in;
  if (a.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (a.coord == "half_pixel_symmetric") {
    // The integer output length over the unrounded one: the ROI's centre maps to the output canvas's centre.
    const double adj = static_cast<double>(out) / len_out;
    const double center = len_in / 2;
    return center * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  if (a.coord == "pytorch_half_pixel") return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (a.coord == "align_corners") return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
  if (a.coord == "asymmetric") return x / scale;
  if (a.coord == "tf_half_pixel_for_nearest") return (x + 0.5) / scale;
  // tf_crop_and_resize
  return len_out > 1 ? rs * (len_in - 1) + x * (re - rs) * (len_in - 1) / (len_out - 1)
                     : 0.5 * (rs + re) * (len_in - 1);
}

// Antialiased linear / cubic taps (ONNX reference semantics): with s = min(scale, 1), the filter is stretched by
// 1/s. Pixel p = x - ratio + i (ratio = x - floor(x), or 1 when x is an integer) gets the weight
// f(s * (i - ratio)) for i in [start, 2 - start) (linear: start = floor(-1/s) + 1, f = max(0, 1 - |t|); cubic:
// start = floor(-2/s) + 1, the cubic kernel); weights are normalised; reads past the edges take the edge pixel,
// or (exclude_outside) are dropped and the rest renormalised.
void antialias_taps(const ResizeAttrs& a, double x, double scale, int64_t in, std::vector<Tap>* taps) {
  const double s = std::min(scale, 1.0);
  const double fl = std::floor(x);
  const double ratio = x == fl ? 1.0 : x - fl;
  const bool linear = a.mode == "linear";
  const auto start = static_cast<int64_t>(std::floor((linear ? -1.0 : -2.0) / s) + 1);
  const double A = a.cubic_a;
  auto weight = [&](double t) {
    t = std::fabs(t);
    if (linear) return std::max(0.0, 1.0 - t);
    if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0.0;
  };
  std::vector<std::pair<int64_t, double>> w;
  double sum = 0.0;
  const auto base = static_cast<int64_t>(std::llround(x - ratio));
  for (int64_t i = start; i < 2 - start; ++i) {
    const int64_t p = base + i;
    double c = weight(s * (static_cast<double>(i) - ratio));
    if (a.exclude_outside && (p < 0 || p >= in)) c = 0.0;
    w.emplace_back(std::min<int64_t>(std::max<int64_t>(p, 0), in - 1), c);
    sum += c;
  }
  for (const auto& [p, c] : w)
    if (c != 0.0 && sum != 0.0) taps->push_back({p, c / sum});
}

AxisTaps axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double rs, double re) {
  AxisTaps t;
  t.taps.resize(static_cast<size_t>(out));
  t.outside.assign(static_cast<size_t>(out), 0);
  auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    std::vector<Tap>& taps = t.taps[static_cast<size_t>(o)];
    if (in == out && scale == 1.0 && a.coord != "tf_crop_and_resize") {
      taps.push_back({o, 1.0});  // identity axis
      continue;
    }
    const double x = original_coord(a, static_cast<double>(o), scale, in, out, rs, re);
    if (a.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside[static_cast<size_t>(o)] = 1;
      continue;
    }
    const double fl = std::floor(x);
    const auto x0 = static_cast<int64_t>(fl);
    const double r = x - fl;
    if (a.antialias && a.mode != "nearest") {
      antialias_taps(a, x, scale, in, &taps);
      continue;
    }
    if (a.mode == "nearest") {
      bool up;
      if (r == 0.0)
        up = false;
      else if (a.nearest_mode == "round_prefer_floor")
        up = r > 0.5;
      else if (a.nearest_mode == "round_prefer_ceil")
        up = r >= 0.5;
      else if (a.nearest_mode == "floor")
        up = false;
      else
        up = true;
      taps.push_back({clamp(x0 + (up ? 1 : 0)), 1.0});
    } else if (a.mode == "linear") {
      taps.push_back({clamp(x0), 1.0 - r});
      if (r != 0.0) taps.push_back({clamp(x0 + 1), r});
    } else {
      const double A = a.cubic_a;
      double c[4];
      const double r1 = r + 1, r2 = 1 - r, r3 = 2 - r;
      c[0] = ((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A;
      c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
      c[2] = ((A + 2) * r2 - (A + 3)) * r2 * r2 + 1;
      c[3] = ((A * r3 - 5 * A) * r3 + 8 * A) * r3 - 4 * A;
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t idx = x0 - 1 + k;
        if (a.exclude_outside && (idx < 0 || idx >= in)) c[k] = 0;
        sum += c[k];
      }
      for (int k = 0; k < 4; ++k) {
        if (a.exclude_outside) c[k] = sum != 0 ? c[k] / sum : 0;
        if (c[k] != 0) taps.push_back({clamp(x0 - 1 + k), c[k]});
      }
    }
  }
  return t;
}

Tensor resize_values(const ir::Node& node, const ResizeAttrs& a, const Tensor& x, const ResizePlan& p) {
  const Shape& in = x.shape();
  const size_t rank = in.size();
  std::vector<AxisTaps> axes(rank);
  for (size_t d = 0; d < rank; ++d) {
    KILNRT_CHECK(in[d] > 0 || p.out[d] == 0, kInvalidArgument, node.describe(), "cannot resize an empty axis");
    axes[d] = axis_taps(a, in[d], p.out[d], p.scale[d], p.roi_start[d], p.roi_end[d]);
  }
  const std::vector<double> src = tensor_to_doubles(x, node);
  int64_t total = 1;
  for (int64_t v : p.out) total *= v;
  std::vector<double> dst(static_cast<size_t>(total));
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    // Sum over the product of the per-axis taps.
    bool outside = false;
    std::vector<const std::vector<Tap>*> lists(rank);
    for (size_t d = 0; d < rank; ++d) {
      outside = outside || axes[d].outside[static_cast<size_t>(idx[d])];
      lists[d] = &axes[d].taps[static_cast<size_t>(idx[d])];
    }
    double acc = 0;
    if (outside) {
      acc = a.extrapolation;
    } else {
      std::vector<size_t> k(rank, 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (size_t d = 0; d < rank; ++d) {
          const Tap& t = (*lists[d])[k[d]];
          w *= t.weight;
          off += t.index * in_strides[d];
        }
        acc += w * src[static_cast<size_t>(off)];
        size_t d = rank;
        while (d > 0) {
          --d;
          if (++k[d] < lists[d]->size()) break;
          k[d] = 0;
          if (d == 0) {
            d = rank + 1;
            break;
          }
        }
        if (d == rank + 1 || rank == 0) break;
      }
    }
    if (!dtype_is_float(x.dtype())) acc = std::nearbyint(acc);
    dst[static_cast<size_t>(flat)] = acc;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < p.out[d]) break;
      idx[d] = 0;
    }
  }
  if (x.dtype() == DType::kUInt8 || x.dtype() == DType::kInt8) {
    const double lo = x.dtype() == DType::kUInt8 ? 0 : -128, hi = x.dtype() == DType::kUInt8 ? 255 : 127;
    for (double& v : dst) v = std::min(std::max(v, lo), hi);
  }
  return tensor_from_doubles(dst, x.dtype(), p.out);
}

const Tensor* optional_input(CpuContext& ctx, int pos) {
  return pos >= 0 && ctx.has_input(static_cast<size_t>(pos)) ? ctx.inputs[static_cast<size_t>(pos)] : nullptr;
}

void resize_cpu(CpuContext& ctx) {
  const ResizeAttrs a = read_attrs(ctx.node, ctx.opset);
  const Tensor& x = ctx.input(0);
  Tensor scales_attr;
  const ResizeInputs pos = input_positions(ctx.node, ctx.opset);
  const Tensor* scales = optional_input(ctx, pos.scales);
  if (ctx.node.op_type == "Upsample" && ctx.opset < 9) {
    std::vector<float> s = ctx.node.attr_floats("scales");
    scales_attr = Tensor::from_vector(s, DType::kFloat32, {static_cast<int64_t>(s.size())});
    scales = &scales_attr;
  }
  KILNRT_CHECK(a.coord != "tf_crop_and_resize" || optional_input(ctx, pos.roi), kInvalidModel, ctx.node.describe(),
               "tf_crop_and_resize needs the roi input");
  const ResizePlan p =
      plan_resize(ctx.node, a, x.shape(), optional_input(ctx, pos.roi), scales, optional_input(ctx, pos.sizes));
  ctx.outputs[0] = resize_values(ctx.node, a, x, p);
}

void infer_resize(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const ResizeAttrs a = read_attrs(ctx.node, ctx.opset);
  const ResizeInputs pos = input_positions(ctx.node, ctx.opset);
  auto value = [&](int p) -> const Tensor* { return p >= 0 ? ctx.value(static_cast<size_t>(p)) : nullptr; };
  auto present = [&](int p) { return p >= 0 && ctx.has_input(static_cast<size_t>(p)); };
  bool known = ir::sym_shape_known(x.shape);
  Tensor scales_attr;
  const Tensor* scales = value(pos.scales);
  if (ctx.node.op_type == "Upsample" && ctx.opset < 9) {
    std::vector<float> s = ctx.node.attr_floats("scales");
    scales_attr = Tensor::from_vector(s, DType::kFloat32, {static_cast<int64_t>(s.size())});
    scales = &scales_attr;
  } else if (present(pos.scales) && !scales) {
    known = false;
  }
  if (present(pos.sizes) && !value(pos.sizes)) known = false;
  if (known) {
    Shape in = ir::sym_shape_to_shape(x.shape);
    const Tensor* sizes = value(pos.sizes);
    // Empty scales with constant sizes (or the reverse) is fine; a plan needs exactly one non-empty.
    const ResizePlan p = plan_resize(ctx.node, a, in, nullptr, scales, sizes);
    ctx.set_output(0, x.dtype, ir::shape_to_sym(p.out));
    return;
  }
  ir::SymShape out(x.shape.size(), ir::Dim());
  ctx.set_output(0, x.dtype, out);
}

const std::vector<DType> kResizeDtypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                          DType::kUInt8,   DType::kInt8,    DType::kInt32,   DType::kInt64};

KILNRT_REGISTER_OP(OpSchema{"", "Resize", 10, 1000, infer_resize, resize_cpu, kResizeDtypes,
                            "nearest / linear / cubic resize, every coordinate_transformation_mode, scales or sizes"});
KILNRT_REGISTER_OP(OpSchema{"", "Upsample", 7, 9, infer_resize, resize_cpu, kResizeDtypes,
                            "deprecated Resize: nearest or (bi/tri)linear, asymmetric coordinates"});

}  // namespace
}  // namespace kilnrt::ops::nn
