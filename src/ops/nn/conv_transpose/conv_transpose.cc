// ConvTranspose (ONNX, 1-D to 3-D): per group, col = W^T * X by sgemm, then col2im scatters col into the output.
// Supports group, strides, dilations, pads, output_padding, output_shape and auto_pad.
#include <cstring>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

struct TransposeGeometry {
  SpatialParams params;  // pads resolved (may be negative when output_shape asks for a larger output)
  std::vector<int64_t> out_spatial;
};

// Output spatial dims and resolved pads for input spatial dims `in` (unknown dims: -1 -> output -1).
TransposeGeometry conv_transpose_geometry(const ir::Node& node, const std::vector<int64_t>& kernel,
                                          const std::vector<int64_t>& in) {
  const std::string where = node.describe();
  const int nd = static_cast<int>(in.size());
  TransposeGeometry tg;
  SpatialParams& p = tg.params;
  p = read_spatial_params(node, nd, kernel, false);
  std::vector<int64_t> out_pad = node.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
  KILNRT_CHECK(static_cast<int>(out_pad.size()) == nd, kInvalidModel, where,
               "output_padding has " << out_pad.size() << " values, expected " << nd);
  std::vector<int64_t> out_shape;
  if (node.has_attr("output_shape")) {
    out_shape = node.attr_ints("output_shape");
    // Older exporters write N and C too: keep the spatial dims.
    if (static_cast<int>(out_shape.size()) == nd + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    KILNRT_CHECK(static_cast<int>(out_shape.size()) == nd, kInvalidModel, where,
                 "output_shape has " << out_shape.size() << " values, expected " << nd);
  }
  const bool same = p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER";
  for (int i = 0; i < nd; ++i) {
    KILNRT_CHECK(out_pad[i] >= 0, kInvalidModel, where, "output_padding[" << i << "] = " << out_pad[i]);
    if (in[i] < 0) {
      tg.out_spatial.push_back(-1);
      continue;
    }
    const int64_t full = p.strides[i] * (in[i] - 1) + out_pad[i] + p.effective_kernel(i);
    int64_t out = 0;
    if (!out_shape.empty() || same) {
      out = !out_shape.empty() ? out_shape[i] : in[i] * p.strides[i];
      const int64_t total = full - out;
      if (p.auto_pad == "SAME_UPPER") {
        p.pads[i] = floor_half(total);
        p.pads[i + nd] = total - floor_half(total);
      } else {
        p.pads[i] = total - floor_half(total);
        p.pads[i + nd] = floor_half(total);
      }
    } else {
      if (p.auto_pad == "VALID") p.pads[i] = p.pads[i + nd] = 0;
      out = full - p.pads[i] - p.pads[i + nd];
    }
    KILNRT_CHECK(out >= 0, kInvalidArgument, where,
                 "output spatial dim " << i << " would be " << out << " for an input of size " << in[i]);
    tg.out_spatial.push_back(out);
  }
  return tg;
}

std::vector<int64_t> check_conv_transpose_shapes(const Shape& x, const Shape* w, const Shape* b, int64_t group,
                                                 const ir::Node& node) {
  const std::string where = node.describe();
  KILNRT_CHECK(x.size() >= 3, kInvalidArgument, where,
               "input X must have rank >= 3 (N, C, spatial...), got shape " << shape_to_string(x));
  KILNRT_CHECK(group >= 1, kInvalidModel, where, "group must be >= 1, got " << group);
  std::vector<int64_t> kernel;
  if (!w) return kernel;
  KILNRT_CHECK(w->size() == x.size(), kInvalidArgument, where,
               "weights W of shape " << shape_to_string(*w) << " must have the rank of input X " << shape_to_string(x));
  const int64_t c = x[1], wc = (*w)[0], mg = (*w)[1];
  if (c >= 0 && wc >= 0) {
    KILNRT_CHECK(c == wc, kInvalidArgument, where,
                 "input X has " << c << " channels but W (shape " << shape_to_string(*w) << ") expects " << wc);
  }
  if (wc >= 0) {
    KILNRT_CHECK(wc % group == 0, kInvalidModel, where,
                 "W has " << wc << " input channels, not divisible by group " << group);
  }
  if (b && mg >= 0) {
    KILNRT_CHECK(b->size() == 1 && ((*b)[0] < 0 || (*b)[0] == mg * group), kInvalidArgument, where,
                 "bias B of shape " << shape_to_string(*b) << " must be [" << mg * group << "]");
  }
  for (size_t i = 2; i < w->size(); ++i) {
    if ((*w)[i] < 0) return {};
    kernel.push_back((*w)[i]);
  }
  return kernel;
}

// Scatters col[mg * K][in_size] into y[mg][out_size] (which holds the bias already).
void col2im(const float* col, int64_t mg, const Geometry3& g, float* y) {
  const int64_t kernel = g.k_size(), in_size = g.in_size(), out_size = g.out_size();
#pragma omp parallel for schedule(static) if (mg * kernel * in_size > 32768)
  for (int64_t m = 0; m < mg; ++m) {
    float* ym = y + m * out_size;
    for (int64_t kk = 0; kk < kernel; ++kk) {
      const int64_t kw = kk % g.k[2], kh = (kk / g.k[2]) % g.k[1], kd = kk / (g.k[2] * g.k[1]);
      const float* row = col + (m * kernel + kk) * in_size;
      const int64_t off_w = kw * g.d[2] - g.pad_begin[2];
      int64_t lo = 0, hi = 0;
      valid_output_range(off_w, g.s[2], g.out[2], g.in[2], &lo, &hi);
      for (int64_t id = 0; id < g.in[0]; ++id) {
        const int64_t od = id * g.s[0] - g.pad_begin[0] + kd * g.d[0];
        if (od < 0 || od >= g.out[0]) continue;
        for (int64_t ih = 0; ih < g.in[1]; ++ih) {
          const int64_t oh = ih * g.s[1] - g.pad_begin[1] + kh * g.d[1];
          if (oh < 0 || oh >= g.out[1]) continue;
          const float* src = row + (id * g.in[1] + ih) * g.in[2];
          float* dst = ym + (od * g.out[1] + oh) * g.out[2];
          const int64_t s = g.s[2];
          for (int64_t iw = lo; iw < hi; ++iw) dst[iw * s + off_w] += src[iw];
        }
      }
    }
  }
}

void infer_conv_transpose(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const Shape xs = ir::sym_shape_to_shape(x.shape);
  Shape ws, bs;
  if (w.has_shape) ws = ir::sym_shape_to_shape(w.shape);
  const bool has_b = ctx.has_input(2) && ctx.input(2).has_shape;
  if (has_b) bs = ir::sym_shape_to_shape(ctx.input(2).shape);
  const int64_t group = ctx.node.attr_int("group", 1);
  std::vector<int64_t> kernel =
      check_conv_transpose_shapes(xs, w.has_shape ? &ws : nullptr, has_b ? &bs : nullptr, group, ctx.node);
  const int nd = static_cast<int>(xs.size()) - 2;
  ir::SymShape out = {x.shape[0], ir::Dim()};
  if (w.has_shape && w.shape[1].known()) out[1] = ir::Dim(w.shape[1].value * group);
  if (kernel.empty() && !ctx.node.has_attr("kernel_shape")) {
    for (int i = 0; i < nd; ++i) out.push_back(ir::Dim());
  } else {
    std::vector<int64_t> in(xs.begin() + 2, xs.end());
    TransposeGeometry tg = conv_transpose_geometry(ctx.node, kernel, in);
    for (int i = 0; i < nd; ++i) out.push_back(tg.out_spatial[i] >= 0 ? ir::Dim(tg.out_spatial[i]) : ir::Dim());
  }
  ctx.set_output(0, x.dtype, out);
}

void conv_transpose_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const DType dtype = x_in.dtype();
  Tensor x = to_float32(x_in, node, "X");
  Tensor w = to_float32(ctx.input(1), node, "W");
  Tensor b;
  if (ctx.has_input(2)) b = to_float32(ctx.input(2), node, "B");
  const int64_t group = node.attr_int("group", 1);
  std::vector<int64_t> kernel =
      check_conv_transpose_shapes(x.shape(), &w.shape(), b.defined() ? &b.shape() : nullptr, group, node);
  std::vector<int64_t> in_spatial(x.shape().begin() + 2, x.shape().end());
  TransposeGeometry tg = conv_transpose_geometry(node, kernel, in_spatial);
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), cg = c_in / group, mg = w.dim(1), m_out = mg * group;
  Shape y_shape = {n_batch, m_out};
  y_shape.insert(y_shape.end(), tg.out_spatial.begin(), tg.out_spatial.end());
  Tensor y = Tensor::empty(DType::kFloat32, y_shape);
  const Geometry3 g = make_geometry3(tg.params, in_spatial, tg.out_spatial, node);
  const int64_t kernel_size = g.k_size(), in_size = g.in_size(), out_size = g.out_size();
  float* yp = y.data<float>();
  const float* bias = b.defined() ? b.data<float>() : nullptr;
  for (int64_t nm = 0; nm < n_batch * m_out; ++nm) {
    const float v = bias ? bias[nm % m_out] : 0.f;
    float* plane = yp + nm * out_size;
    for (int64_t i = 0; i < out_size; ++i) plane[i] = v;
  }
  std::vector<float> col(static_cast<size_t>(mg * kernel_size * in_size));
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t grp = 0; grp < group; ++grp) {
      const float* xg = xp + (n * c_in + grp * cg) * in_size;
      const float* wg = wp + grp * cg * mg * kernel_size;
      sgemm(true, false, mg * kernel_size, in_size, cg, 1.f, wg, mg * kernel_size, xg, in_size, 0.f, col.data(),
            in_size, node);
      col2im(col.data(), mg, g, yp + (n * m_out + grp * mg) * out_size);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{"", "ConvTranspose", 1, 1000, infer_conv_transpose, conv_transpose_cpu, float_dtypes(),
                            "transposed convolution (1-D..3-D on CPU): group, output_padding, output_shape, auto_pad"});

}  // namespace
}  // namespace kilnrt::ops::nn
