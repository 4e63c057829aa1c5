// GridSample (opsets 16, 20, 22): 4-D input, bilinear / nearest / bicubic (opset 20's "linear" / "cubic"), padding
// zeros / border / reflection, align_corners. Follows the reference semantics (PyTorch's grid_sampler): coordinates are
// unnormalized from
// [-1, 1], border / reflection adjust the source coordinate, and out-of-range taps read 0 (zeros) or the
// clamped / reflected pixel. Computed in double.
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

double unnormalize(double c, int64_t size, bool align) {
  return align ? (c + 1) / 2 * static_cast<double>(size - 1) : ((c + 1) * static_cast<double>(size) - 1) / 2;
}

double reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double mn = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - mn);
  const double extra = std::fmod(x, span);
  const auto flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

double clip(double x, int64_t size) { return std::min(static_cast<double>(size - 1), std::max(x, 0.0)); }

double adjust(double x, int64_t size, const std::string& pad, bool align) {
  if (pad == "border") return clip(x, size);
  if (pad == "reflection") {
    x = align ? reflect(x, 0, 2.0 * static_cast<double>(size - 1))
              : reflect(x, -1, 2.0 * static_cast<double>(size) - 1);
    return clip(x, size);
  }
  return x;
}

void grid_sample_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& xt = ctx.input(0);
  const Tensor& gt = ctx.input(1);
  KILNRT_CHECK(xt.rank() == 4 && gt.rank() == 4 && gt.shape()[3] == 2 && gt.shape()[0] == xt.shape()[0], kUnsupported,
               node.describe(), "GridSample supports 4-D X [N, C, H, W] and grid [N, Ho, Wo, 2]");
  // Opset 20 renamed the modes: "linear" / "cubic" (its defaults) are opset 16's "bilinear" / "bicubic" in 2-D.
  std::string mode = node.attr_string("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  const std::string pad = node.attr_string("padding_mode", "zeros");
  const bool align = node.attr_int("align_corners", 0) != 0;
  KILNRT_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", kInvalidModel, node.describe(),
               "unknown mode '" << mode << "'");
  KILNRT_CHECK(pad == "zeros" || pad == "border" || pad == "reflection", kInvalidModel, node.describe(),
               "unknown padding_mode '" << pad << "'");
  const int64_t N = xt.shape()[0], C = xt.shape()[1], H = xt.shape()[2], W = xt.shape()[3];
  const int64_t Ho = gt.shape()[1], Wo = gt.shape()[2];
  const std::vector<double> x = tensor_to_doubles(xt, node), g = tensor_to_doubles(gt, node);
  std::vector<double> y(static_cast<size_t>(N * C * Ho * Wo), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double* img = x.data() + (n * C + c) * H * W;
      // Pixel read with padding: zeros outside for "zeros"; bicubic taps are themselves clamped / reflected.
      auto pixel = [&](int64_t yy, int64_t xx) -> double {
        if (mode == "bicubic" && pad != "zeros") {
          xx = static_cast<int64_t>(adjust(static_cast<double>(xx), W, pad, align));
          yy = static_cast<int64_t>(adjust(static_cast<double>(yy), H, pad, align));
        }
        if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0;
        return img[yy * W + xx];
      };
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          const double* gp = g.data() + ((n * Ho + i) * Wo + j) * 2;
          double ix = unnormalize(gp[0], W, align), iy = unnormalize(gp[1], H, align);
          double v;
          if (mode == "bicubic") {
            const double fx = std::floor(ix), fy = std::floor(iy);
            const double tx = ix - fx, ty = iy - fy;
            const double A = -0.75;
            auto c1 = [A](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };
            auto c2 = [A](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };
            const double wx[4] = {c2(tx + 1), c1(tx), c1(1 - tx), c2(2 - tx)};
            const double wy[4] = {c2(ty + 1), c1(ty), c1(1 - ty), c2(2 - ty)};
            v = 0;
            for (int a = 0; a < 4; ++a)
              for (int b = 0; b < 4; ++b)
                v += wy[a] * wx[b] * pixel(static_cast<int64_t>(fy) - 1 + a, static_cast<int64_t>(fx) - 1 + b);
          } else {
            ix = adjust(ix, W, pad, align);
            iy = adjust(iy, H, pad, align);
            if (mode == "nearest") {
              v = pixel(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)));
            } else {
              const double fx = std::floor(ix), fy = std::floor(iy);
              const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
              const double lx = ix - fx, ly = iy - fy;
              v = (1 - ly) * (1 - lx) * pixel(y0, x0) + (1 - ly) * lx * pixel(y0, x0 + 1) +
                  ly * (1 - lx) * pixel(y0 + 1, x0) + ly * lx * pixel(y0 + 1, x0 + 1);
            }
          }
          y[static_cast<size_t>(((n * C + c) * Ho + i) * Wo + j)] = v;
        }
    }
  ctx.outputs[0] = tensor_from_doubles(y, xt.dtype(), {N, C, Ho, Wo});
}

void infer_grid_sample(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& g = ctx.input(1);
  ir::Dim n, c, ho, wo;
  if (x.has_shape && x.shape.size() == 4) {
    n = x.shape[0];
    c = x.shape[1];
  }
  if (g.has_shape && g.shape.size() == 4) {
    ho = g.shape[1];
    wo = g.shape[2];
  }
  ctx.set_output(0, x.dtype, {n, c, ho, wo});
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "GridSample",
                            16,
                            1000,
                            infer_grid_sample,
                            grid_sample_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16},
                            "4-D sampling at grid positions: bilinear/nearest/bicubic, zeros/border/reflection"});

}  // namespace
}  // namespace kilnrt::ops::nn
