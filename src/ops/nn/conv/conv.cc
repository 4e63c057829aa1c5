// Conv (ONNX, 1-D to 3-D): im2col + sgemm in general, sgemm straight on the input for 1x1 stride-1 unpadded
// convolutions, and a direct loop for depthwise convolutions (group == C, one input channel per group).
#include <cstring>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// Unfolds `channels` planes of x (geometry g) into col[channels * K][out_size].
void im2col(const float* x, int64_t channels, const Geometry3& g, float* col) {
  const int64_t kernel = g.k_size(), out_size = g.out_size(), in_size = g.in_size();
  const int64_t rows = channels * kernel;
#pragma omp parallel for schedule(static) if (rows * out_size > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r / kernel, kk = r % kernel;
    const int64_t kw = kk % g.k[2], kh = (kk / g.k[2]) % g.k[1], kd = kk / (g.k[2] * g.k[1]);
    const float* xc = x + c * in_size;
    float* dst = col + r * out_size;
    const int64_t off_w = kw * g.d[2] - g.pad_begin[2];
    int64_t lo = 0, hi = 0;
    valid_output_range(off_w, g.s[2], g.in[2], g.out[2], &lo, &hi);
    for (int64_t od = 0; od < g.out[0]; ++od) {
      const int64_t id = od * g.s[0] - g.pad_begin[0] + kd * g.d[0];
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        float* row = dst + (od * g.out[1] + oh) * g.out[2];
        const int64_t ih = oh * g.s[1] - g.pad_begin[1] + kh * g.d[1];
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
          std::memset(row, 0, sizeof(float) * g.out[2]);
          continue;
        }
        const float* xrow = xc + (id * g.in[1] + ih) * g.in[2];
        for (int64_t ow = 0; ow < lo; ++ow) row[ow] = 0.f;
        if (g.s[2] == 1) {
          if (hi > lo) std::memcpy(row + lo, xrow + lo + off_w, sizeof(float) * (hi - lo));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] = xrow[ow * g.s[2] + off_w];
        }
        for (int64_t ow = hi; ow < g.out[2]; ++ow) row[ow] = 0.f;
      }
    }
  }
}

// Depthwise: each output channel m reads input channel m / out_per_group.
void depthwise_conv(const float* x, const float* w, const float* bias, float* y, int64_t n_batch, int64_t c_in,
                    int64_t m_out, const Geometry3& g) {
  const int64_t out_per_group = m_out / c_in;
  const int64_t in_size = g.in_size(), out_size = g.out_size(), kernel = g.k_size();
#pragma omp parallel for schedule(static) if (n_batch * m_out * out_size * kernel > 32768)
  for (int64_t nm = 0; nm < n_batch * m_out; ++nm) {
    const int64_t n = nm / m_out, m = nm % m_out, c = m / out_per_group;
    const float* xc = x + (n * c_in + c) * in_size;
    const float* wm = w + m * kernel;
    float* yp = y + nm * out_size;
    const float b = bias ? bias[m] : 0.f;
    for (int64_t i = 0; i < out_size; ++i) yp[i] = b;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const float wv = wm[(kd * g.k[1] + kh) * g.k[2] + kw];
          const int64_t off_w = kw * g.d[2] - g.pad_begin[2];
          int64_t lo = 0, hi = 0;
          valid_output_range(off_w, g.s[2], g.in[2], g.out[2], &lo, &hi);
          for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.s[0] - g.pad_begin[0] + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              const int64_t ih = oh * g.s[1] - g.pad_begin[1] + kh * g.d[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              float* yrow = yp + (od * g.out[1] + oh) * g.out[2];
              const float* xrow = xc + (id * g.in[1] + ih) * g.in[2];
              if (g.s[2] == 1) {
                const float* xs = xrow + lo + off_w;  // in bounds: lo + off_w >= 0
                for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xs[ow - lo];
              } else {
                const int64_t s = g.s[2];
                for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += wv * xrow[ow * s + off_w];
              }
            }
          }
        }
      }
    }
  }
}

void general_conv(const float* x, const float* w, const float* bias, float* y, int64_t n_batch, int64_t c_in,
                  int64_t m_out, int64_t group, const Geometry3& g, const ir::Node& node) {
  const int64_t cg = c_in / group, mg = m_out / group, kernel = g.k_size();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  bool pointwise = kernel == 1;
  for (int i = 0; i < 3; ++i) {
    pointwise = pointwise && g.s[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
  }
  std::vector<float> col;
  if (!pointwise) col.resize(static_cast<size_t>(cg * kernel * out_size));
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t grp = 0; grp < group; ++grp) {
      const float* xg = x + (n * c_in + grp * cg) * in_size;
      const float* src = xg;
      if (!pointwise) {
        im2col(xg, cg, g, col.data());
        src = col.data();
      }
      float* yg = y + (n * m_out + grp * mg) * out_size;
      sgemm(false, false, mg, out_size, cg * kernel, 1.f, w + grp * mg * cg * kernel, cg * kernel, src, out_size, 0.f,
            yg, out_size, node);
    }
  }
  if (bias) {
#pragma omp parallel for schedule(static) if (n_batch * m_out * out_size > 32768)
    for (int64_t nm = 0; nm < n_batch * m_out; ++nm) {
      const float b = bias[nm % m_out];
      float* yp = y + nm * out_size;
      for (int64_t i = 0; i < out_size; ++i) yp[i] += b;
    }
  }
}

// Checks X / W / B shapes (known dims only; -1 = unknown) and returns the weights' kernel spatial shape if known.
std::vector<int64_t> check_conv_shapes(const Shape& x, const Shape* w, const Shape* b, int64_t group,
                                       const ir::Node& node) {
  const std::string where = node.describe();
  KILNRT_CHECK(x.size() >= 3, kInvalidArgument, where,
               "input X must have rank >= 3 (N, C, spatial...), got shape " << shape_to_string(x));
  KILNRT_CHECK(group >= 1, kInvalidModel, where, "group must be >= 1, got " << group);
  std::vector<int64_t> kernel;
  if (!w) return kernel;
  KILNRT_CHECK(w->size() == x.size(), kInvalidArgument, where,
               "weights W of shape " << shape_to_string(*w) << " must have the rank of input X " << shape_to_string(x));
  const int64_t m = (*w)[0], cg = (*w)[1], c = x[1];
  if (m >= 0) {
    KILNRT_CHECK(m % group == 0, kInvalidModel, where,
                 "W has " << m << " output channels, not divisible by group " << group);
  }
  if (c >= 0 && cg >= 0) {
    KILNRT_CHECK(c == cg * group, kInvalidArgument, where,
                 "input X has " << c << " channels but W expects " << cg * group << " (W.shape[1] = " << cg
                                << " x group " << group << ")");
  }
  if (b && m >= 0) {
    KILNRT_CHECK(b->size() == 1 && ((*b)[0] < 0 || (*b)[0] == m), kInvalidArgument, where,
                 "bias B of shape " << shape_to_string(*b) << " must be [" << m << "]");
  }
  for (size_t i = 2; i < w->size(); ++i) {
    if ((*w)[i] < 0) return {};
    kernel.push_back((*w)[i]);
  }
  return kernel;
}

void infer_conv(ShapeContext& ctx) {
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
      check_conv_shapes(xs, w.has_shape ? &ws : nullptr, has_b ? &bs : nullptr, group, ctx.node);
  const int nd = static_cast<int>(xs.size()) - 2;
  ir::SymShape out = {x.shape[0], w.has_shape ? w.shape[0] : ir::Dim()};
  if (kernel.empty() && !ctx.node.has_attr("kernel_shape")) {
    for (int i = 0; i < nd; ++i) out.push_back(ir::Dim());
  } else {
    SpatialParams p = read_spatial_params(ctx.node, nd, kernel, false);
    ir::SymShape spatial(x.shape.begin() + 2, x.shape.end());
    for (const ir::Dim& d : pooled_output_sym_dims(p, spatial, ctx.node)) out.push_back(d);
  }
  ctx.set_output(0, x.dtype, out);
}

void conv_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const DType dtype = x_in.dtype();
  Tensor x = to_float32(x_in, node, "X");
  Tensor w = to_float32(ctx.input(1), node, "W");
  Tensor b;
  if (ctx.has_input(2)) b = to_float32(ctx.input(2), node, "B");
  const int64_t group = node.attr_int("group", 1);
  std::vector<int64_t> kernel =
      check_conv_shapes(x.shape(), &w.shape(), b.defined() ? &b.shape() : nullptr, group, node);
  const int nd = x.rank() - 2;
  SpatialParams p = read_spatial_params(node, nd, kernel, false);
  std::vector<int64_t> in_spatial(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out_spatial = pooled_output_dims(p, in_spatial, node);
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), m_out = w.dim(0);
  Shape y_shape = {n_batch, m_out};
  y_shape.insert(y_shape.end(), out_spatial.begin(), out_spatial.end());
  Tensor y = Tensor::empty(DType::kFloat32, y_shape);
  const Geometry3 g = make_geometry3(p, in_spatial, out_spatial, node);
  const float* bias = b.defined() ? b.data<float>() : nullptr;
  if (group > 1 && group == c_in && w.dim(1) == 1) {
    depthwise_conv(x.data<float>(), w.data<float>(), bias, y.data<float>(), n_batch, c_in, m_out, g);
  } else {
    general_conv(x.data<float>(), w.data<float>(), bias, y.data<float>(), n_batch, c_in, m_out, group, g, node);
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{"", "Conv", 1, 1000, infer_conv, conv_cpu, float_dtypes(),
                            "N-D convolution (1-D..3-D on CPU): groups, dilations, strides, pads, auto_pad, bias"});

}  // namespace
}  // namespace kilnrt::ops::nn
