// ONNX DeformConv (opset 19), 2-D: a convolution whose kernel taps are moved by learned offsets.
//   X [N, C, H, W], W [OC, C/group, kH, kW], offset [N, offset_group*kH*kW*2, oH, oW] ((dh, dw) per tap),
//   B [OC]?, mask [N, offset_group*kH*kW, oH, oW]? (per-tap factor, default 1).
// Tap (a, b) of output (i, j) samples X bilinearly at (i*sH - padT + a*dilH + dh, j*sW - padL + b*dilW + dw);
// neighbours outside the image count as 0. Input channel c uses offset group c / (C / offset_group).
// Math in double, I/O in X's float dtype.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

double bilinear_zero_pad(const float* plane, int64_t h, int64_t w, double y, double x) {
  const double y0f = std::floor(y), x0f = std::floor(x);
  const auto y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const double fy = y - y0f, fx = x - x0f;
  double acc = 0.0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      const double wt = (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx);
      if (wt != 0.0) acc += wt * plane[yy * w + xx];
    }
  return acc;
}

void deform_conv_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "X");
  Tensor w = to_float32(ctx.input(1), node, "W");
  Tensor off = to_float32(ctx.input(2), node, "offset");
  KILNRT_CHECK(x.rank() == 4 && w.rank() == 4 && off.rank() == 4, kUnsupported, node.describe(),
               "DeformConv supports 2-D inputs: X [N, C, H, W], W [OC, C/group, kH, kW], offset [N, *, oH, oW]");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t oc = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  const int64_t group = node.attr_int("group", 1), og = node.attr_int("offset_group", 1);
  const std::vector<int64_t> dil = node.attr_ints("dilations", std::vector<int64_t>{1, 1});
  const std::vector<int64_t> st = node.attr_ints("strides", std::vector<int64_t>{1, 1});
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0});
  KILNRT_CHECK(dil.size() == 2 && st.size() == 2 && pads.size() == 4, kInvalidModel, node.describe(),
               "dilations / strides need 2 values and pads 4");
  KILNRT_CHECK(group > 0 && og > 0 && c == w.dim(1) * group && oc % group == 0 && c % og == 0, kInvalidModel,
               node.describe(),
               "inconsistent channels: X " << shape_to_string(x.shape()) << ", W " << shape_to_string(w.shape())
                                           << ", group " << group << ", offset_group " << og);
  const int64_t oh = off.dim(2), ow = off.dim(3);
  const int64_t exp_oh = (h + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / st[0] + 1;
  const int64_t exp_ow = (wd + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / st[1] + 1;
  KILNRT_CHECK(off.dim(0) == n && off.dim(1) == og * kh * kw * 2 && oh == exp_oh && ow == exp_ow, kInvalidModel,
               node.describe(),
               "offset has shape " << shape_to_string(off.shape()) << ", expected [" << n << ", " << og * kh * kw * 2
                                   << ", " << exp_oh << ", " << exp_ow << "]");
  Tensor bias, mask;
  if (ctx.has_input(3)) {
    bias = to_float32(ctx.input(3), node, "B");
    KILNRT_CHECK(bias.numel() == oc, kInvalidModel, node.describe(), "B must have " << oc << " values");
  }
  if (ctx.has_input(4)) {
    mask = to_float32(ctx.input(4), node, "mask");
    KILNRT_CHECK(mask.shape() == (Shape{n, og * kh * kw, oh, ow}), kInvalidModel, node.describe(),
                 "mask has shape " << shape_to_string(mask.shape()) << ", expected [" << n << ", " << og * kh * kw
                                   << ", " << oh << ", " << ow << "]");
  }
  const int64_t icg = c / group, ocg = oc / group, ic_per_og = c / og;
  Tensor y = Tensor::empty(DType::kFloat32, {n, oc, oh, ow});
  float* yp = y.data<float>();
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const float* op = off.data<float>();
  // Sampled values of every (input channel, tap, output position), reused by every output channel of the group.
  std::vector<double> cols(static_cast<size_t>(c * kh * kw * oh * ow));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t g = ci / ic_per_og;
      const float* plane = xp + (b * c + ci) * h * wd;
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t e = 0; e < kw; ++e) {
          const int64_t tap = (g * kh + a) * kw + e;
          const float* dh = op + ((b * og * kh * kw + tap) * 2) * oh * ow;
          const float* dw = dh + oh * ow;
          const float* mk = mask.defined() ? mask.data<float>() + (b * og * kh * kw + tap) * oh * ow : nullptr;
          double* col = cols.data() + ((ci * kh + a) * kw + e) * oh * ow;
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t p = i * ow + j;
              const double yy = static_cast<double>(i * st[0] - pads[0] + a * dil[0]) + dh[p];
              const double xx = static_cast<double>(j * st[1] - pads[1] + e * dil[1]) + dw[p];
              double v = bilinear_zero_pad(plane, h, wd, yy, xx);
              if (mk) v *= mk[p];
              col[p] = v;
            }
        }
    }
    for (int64_t o = 0; o < oc; ++o) {
      const int64_t g = o / ocg;
      float* yo = yp + (b * oc + o) * oh * ow;
      for (int64_t p = 0; p < oh * ow; ++p) {
        double acc = bias.defined() ? bias.data<float>()[o] : 0.0;
        for (int64_t cl = 0; cl < icg; ++cl) {
          const int64_t ci = g * icg + cl;
          for (int64_t k = 0; k < kh * kw; ++k)
            acc += wp[(o * icg + cl) * kh * kw + k] * cols[static_cast<size_t>((ci * kh * kw + k) * oh * ow + p)];
        }
        yo[p] = static_cast<float>(acc);
      }
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

void infer_deform_conv(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  const ir::TensorType& off = ctx.input(2);
  if (!x.has_shape || !w.has_shape || !off.has_shape || off.shape.size() != 4 || w.shape.empty()) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  ctx.set_output(0, x.dtype, {x.shape[0], w.shape[0], off.shape[2], off.shape[3]});
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "DeformConv", 19, 1000, infer_deform_conv, deform_conv_cpu, float_dtypes(),
                            "2-D deformable convolution: per-tap offsets (bilinear, zero outside) and mask"});

}  // namespace kilnrt::ops::nn
