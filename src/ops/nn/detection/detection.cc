// Detection ops: NonMaxSuppression (opset 10/11; output size depends on the data), RoiAlign (10/16: avg and max,
// half_pixel / output_half_pixel), MaxUnpool (9/11). Reference kernels computed in double.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// ---- NonMaxSuppression ------------------------------------------------------------------------------------------

struct Box {
  double y1, x1, y2, x2;
};

Box read_box(const double* b, bool center) {
  if (center) return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

double iou(const Box& a, const Box& b) {
  const double ih = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double iw = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double inter = ih * iw;
  const double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

void nms_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& boxes_t = ctx.input(0);
  const Tensor& scores_t = ctx.input(1);
  KILNRT_CHECK(boxes_t.rank() == 3 && boxes_t.shape()[2] == 4 && scores_t.rank() == 3 &&
                   scores_t.shape()[0] == boxes_t.shape()[0] && scores_t.shape()[2] == boxes_t.shape()[1],
               kInvalidArgument, node.describe(),
               "boxes must be [B, N, 4] and scores [B, C, N], got " << shape_to_string(boxes_t.shape()) << " and "
                                                                    << shape_to_string(scores_t.shape()));
  const int64_t B = boxes_t.shape()[0], N = boxes_t.shape()[1], C = scores_t.shape()[1];
  int64_t max_out = 0;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) max_out = tensor_to_int64s(ctx.input(2))[0];
  double iou_th = 0, score_th = -INFINITY;
  if (ctx.has_input(3) && ctx.input(3).numel() > 0) iou_th = tensor_to_doubles(ctx.input(3), node)[0];
  const bool has_score_th = ctx.has_input(4) && ctx.input(4).numel() > 0;
  if (has_score_th) score_th = tensor_to_doubles(ctx.input(4), node)[0];
  const bool center = node.attr_int("center_point_box", 0) != 0;
  const std::vector<double> boxes = tensor_to_doubles(boxes_t, node);
  const std::vector<double> scores = tensor_to_doubles(scores_t, node);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      const double* sc = scores.data() + (b * C + c) * N;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_th || sc[i] > score_th) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      std::vector<Box> kept;
      int64_t count = 0;
      for (int64_t i : order) {
        if (count >= max_out) break;
        const Box bx = read_box(boxes.data() + (b * N + i) * 4, center);
        bool keep = true;
        for (const Box& k : kept)
          if (iou(bx, k) > iou_th) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(bx);
        selected.insert(selected.end(), {b, c, i});
        ++count;
      }
    }
  }
  ctx.outputs[0] = Tensor::from_vector(selected, DType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
}

void infer_nms(ShapeContext& ctx) { ctx.set_output(0, DType::kInt64, {ir::Dim(), ir::Dim(3)}); }

KILNRT_REGISTER_OP(OpSchema{"",
                            "NonMaxSuppression",
                            10,
                            1000,
                            infer_nms,
                            nms_cpu,
                            {DType::kFloat32},
                            "greedy per-class NMS; output [num_selected, 3] (batch, class, box), data-dependent"});

// ---- RoiAlign ---------------------------------------------------------------------------------------------------

void roialign_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& xt = ctx.input(0);
  KILNRT_CHECK(xt.rank() == 4, kInvalidArgument, node.describe(), "X must be [N, C, H, W]");
  const int64_t C = xt.shape()[1], H = xt.shape()[2], W = xt.shape()[3];
  const std::vector<double> x = tensor_to_doubles(xt, node);
  const std::vector<double> rois = tensor_to_doubles(ctx.input(1), node);
  const std::vector<int64_t> bidx = tensor_to_int64s(ctx.input(2));
  const int64_t R = static_cast<int64_t>(bidx.size());
  KILNRT_CHECK(ctx.input(1).numel() == R * 4, kInvalidArgument, node.describe(), "rois must be [num_rois, 4]");
  const int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  const int64_t sr = node.attr_int("sampling_ratio", 0);
  KILNRT_CHECK(oh >= 1 && ow >= 1 && oh <= (1 << 16) && ow <= (1 << 16) && sr >= 0 && sr <= (1 << 10), kInvalidModel,
               node.describe(),
               "RoiAlign: output size " << oh << "x" << ow << " or sampling_ratio " << sr << " out of range");
  for (int64_t b : bidx)
    KILNRT_CHECK(b >= 0 && b < xt.shape()[0], kInvalidArgument, node.describe(),
                 "RoiAlign: batch index " << b << " is outside [0, " << xt.shape()[0] << ")");
  // Bilinear sampling needs at least one pixel: an empty map has none to interpolate from, so rois on it are
  // refused (an empty output, no rois or no channels, is fine).
  KILNRT_CHECK((H > 0 && W > 0) || R == 0 || C == 0, kInvalidArgument, node.describe(),
               "RoiAlign: empty feature map " << shape_to_string(xt.shape())
                                              << " (H and W must be at least 1 to sample " << R << " roi(s))");
  const double scale = node.attr_float("spatial_scale", 1.f);
  const std::string mode = node.attr_string("mode", "avg");
  const std::string ctm =
      ctx.opset >= 16 ? node.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  const bool half = ctm == "half_pixel";
  std::vector<double> y(static_cast<size_t>(R * C * oh * ow), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const double off = half ? 0.5 : 0.0;
    const double sw = rois[r * 4] * scale - off, sh = rois[r * 4 + 1] * scale - off;
    const double ew = rois[r * 4 + 2] * scale - off, eh = rois[r * 4 + 3] * scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    // A hostile roi (inf / NaN / 1e300) would make the sampling grid undefined or astronomically large.
    KILNRT_CHECK(std::isfinite(rw) && std::isfinite(rh) && std::fabs(rw) < 1e7 && std::fabs(rh) < 1e7, kInvalidArgument,
                 node.describe(), "RoiAlign: roi " << r << " is not finite or too large");
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh = sr > 0 ? sr : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
    const int64_t gw = sr > 0 ? sr : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    const int64_t n = bidx[static_cast<size_t>(r)];
    for (int64_t c = 0; c < C; ++c) {
      const double* img = x.data() + (n * C + c) * H * W;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
              double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
              double v = 0, vmax = 0;
              if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                auto yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx);
                int64_t yh, xh;
                if (yl >= H - 1) {
                  yh = yl = H - 1;
                  yy = static_cast<double>(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= W - 1) {
                  xh = xl = W - 1;
                  xx = static_cast<double>(xl);
                } else {
                  xh = xl + 1;
                }
                const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                const double t[4] = {hy * hx * img[yl * W + xl], hy * lx * img[yl * W + xh], ly * hx * img[yh * W + xl],
                                     ly * lx * img[yh * W + xh]};
                v = t[0] + t[1] + t[2] + t[3];
                vmax = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
              }
              if (mode == "avg")
                acc += v;
              else {
                acc = first ? vmax : std::max(acc, vmax);
                first = false;
              }
            }
          y[static_cast<size_t>(((r * C + c) * oh + ph) * ow + pw)] = mode == "avg" ? acc / count : acc;
        }
    }
  }
  ctx.outputs[0] = tensor_from_doubles(y, xt.dtype(), {R, C, oh, ow});
}

void infer_roialign(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  ir::Dim r = ctx.input(1).has_shape && !ctx.input(1).shape.empty() ? ctx.input(1).shape[0] : ir::Dim();
  ir::Dim c = x.has_shape && x.shape.size() == 4 ? x.shape[1] : ir::Dim();
  ctx.set_output(0, x.dtype,
                 {r, c, ir::Dim(ctx.node.attr_int("output_height", 1)), ir::Dim(ctx.node.attr_int("output_width", 1))});
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "RoiAlign",
                            10,
                            1000,
                            infer_roialign,
                            roialign_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16},
                            "RoI Align (avg/max, half_pixel or output_half_pixel, sampling_ratio)"});

// ---- MaxUnpool --------------------------------------------------------------------------------------------------

Shape maxunpool_shape(const ir::Node& node, const Shape& in) {
  const size_t nd = in.size() - 2;
  const std::vector<int64_t> k = node.attr_ints("kernel_shape");
  std::vector<int64_t> s = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> p = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  KILNRT_CHECK(k.size() == nd && s.size() == nd && p.size() == 2 * nd, kInvalidModel, node.describe(),
               "kernel_shape/strides/pads do not match the input rank");
  Shape out = in;
  for (size_t i = 0; i < nd; ++i) out[2 + i] = (in[2 + i] - 1) * s[i] + k[i] - p[i] - p[nd + i];
  return out;
}

void maxunpool_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> idx = tensor_to_int64s(ctx.input(1));
  // Indices are flat positions in the default (unpadded) output shape; with an explicit output_shape each keeps
  // its coordinates there.
  const Shape dflt = maxunpool_shape(ctx.node, x.shape());
  Shape out = dflt;
  if (ctx.has_input(2)) out = tensor_to_int64s(ctx.input(2));
  KILNRT_CHECK(out.size() == dflt.size(), kInvalidArgument, ctx.node.describe(), "output_shape has the wrong rank");
  const std::vector<double> xv = tensor_to_doubles(x, ctx.node);
  // Hostile models (fuzz finding, 2026-11-22): indices of another size than X, and non-positive or overflowing
  // shapes, were used unchecked.
  KILNRT_CHECK(idx.size() == xv.size(), kInvalidArgument, ctx.node.describe(),
               "MaxUnpool: I has " << idx.size() << " elements, X has " << xv.size());
  int64_t total = 1, dflt_total = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    KILNRT_CHECK(
        out[d] > 0 && dflt[d] > 0 && !__builtin_mul_overflow(total, out[d], &total) &&
            !__builtin_mul_overflow(dflt_total, dflt[d], &dflt_total) && total <= (int64_t(1) << 40),
        kInvalidArgument, ctx.node.describe(),
        "MaxUnpool: invalid output shape " << shape_to_string(out) << " (unpooled " << shape_to_string(dflt) << ")");
  }
  std::vector<double> y(static_cast<size_t>(total), 0.0);
  for (size_t i = 0; i < xv.size(); ++i) {
    KILNRT_CHECK(idx[i] >= 0 && idx[i] < dflt_total, kInvalidArgument, ctx.node.describe(),
                 "index " << idx[i] << " is outside the unpooled shape " << shape_to_string(dflt));
    int64_t rem = idx[i], flat = 0, stride = 1;
    for (size_t d = dflt.size(); d-- > 0;) {
      const int64_t c = rem % dflt[d];
      rem /= dflt[d];
      KILNRT_CHECK(c < out[d], kInvalidArgument, ctx.node.describe(), "output_shape is smaller than the indices");
      flat += c * stride;
      stride *= out[d];
    }
    y[static_cast<size_t>(flat)] = xv[i];
  }
  ctx.outputs[0] = tensor_from_doubles(y, x.dtype(), out);
}

void infer_maxunpool(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (ctx.has_input(2)) {
    if (const Tensor* v = ctx.value(2)) {
      ctx.set_output(0, x.dtype, ir::shape_to_sym(tensor_to_int64s(*v)));
    } else {
      ctx.set_output(0, x.dtype, ir::SymShape(x.has_shape ? x.shape.size() : 4, ir::Dim()));
    }
    return;
  }
  if (x.has_shape && ir::sym_shape_known(x.shape)) {
    ctx.set_output(0, x.dtype, ir::shape_to_sym(maxunpool_shape(ctx.node, ir::sym_shape_to_shape(x.shape))));
  } else {
    ctx.set_output(0, x.dtype, ir::SymShape(x.has_shape ? x.shape.size() : 4, ir::Dim()));
  }
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "MaxUnpool",
                            9,
                            1000,
                            infer_maxunpool,
                            maxunpool_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16},
                            "scatters X to the flat Indices of MaxPool; optional output_shape"});

}  // namespace
}  // namespace kilnrt::ops::nn
