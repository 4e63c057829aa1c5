// Pools (ONNX, 1-D to 3-D): MaxPool (float, float16, bfloat16, int8, uint8; the optional Indices output in
// row-major or column-major storage order), AveragePool (count_include_pad), LpPool, GlobalAveragePool and
// GlobalMaxPool; kernel, strides, pads, dilations, ceil_mode, auto_pad. 8-bit integers are pooled in float32, which
// holds every int8 / uint8 value exactly, so the round trip is lossless.
#include <algorithm>
#include <vector>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void check_pool_input(const Shape& x, const ir::Node& node) {
  KILNRT_CHECK(x.size() >= 3, kInvalidArgument, node.describe(),
               "input X must have rank >= 3 (N, C, spatial...), got shape " << shape_to_string(x));
}

void infer_pool(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const bool has_indices = ctx.outputs.size() > 1 && ctx.node.outputs.size() > 1 && !ctx.node.outputs[1].empty();
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    if (has_indices) ctx.set_output_rank_unknown(1, DType::kInt64);
    return;
  }
  check_pool_input(ir::sym_shape_to_shape(x.shape), ctx.node);
  const int nd = static_cast<int>(x.shape.size()) - 2;
  SpatialParams p = read_spatial_params(ctx.node, nd, {}, true);
  ir::SymShape out = {x.shape[0], x.shape[1]};
  ir::SymShape spatial(x.shape.begin() + 2, x.shape.end());
  for (const ir::Dim& d : pooled_output_sym_dims(p, spatial, ctx.node)) out.push_back(d);
  ctx.set_output(0, x.dtype, out);
  if (has_indices) ctx.set_output(1, DType::kInt64, out);
}

struct PoolSetup {
  Tensor x;  // float32
  DType dtype;
  Geometry3 g;
  Shape y_shape;
  int64_t planes = 0;
};

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// MaxPool's input as float32: int8 / uint8 exactly, float16 / bfloat16 through nn_common.
Tensor pool_input_float32(const Tensor& x, const ir::Node& node) {
  if (!is_8bit(x.dtype())) return to_float32(x, node, "X");
  Tensor out = Tensor::empty(DType::kFloat32, x.shape());
  float* dst = out.data<float>();
  const int64_t n = x.numel();
  if (x.dtype() == DType::kInt8) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(x.data<int8_t>()[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(x.data<uint8_t>()[i]);
  }
  return out;
}

// A float32 result back in the input's dtype. 8-bit: every value is an input value; a window with no input element
// (-inf) becomes the dtype's lowest value.
Tensor pool_output(const Tensor& y, DType dtype) {
  if (!is_8bit(dtype)) return from_float32(y, dtype);
  Tensor out = Tensor::empty(dtype, y.shape());
  const float* src = y.data<float>();
  const int64_t n = y.numel();
  const float lo = dtype == DType::kInt8 ? -128.0f : 0.0f, hi = dtype == DType::kInt8 ? 127.0f : 255.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::min(hi, std::max(lo, src[i]));
    if (dtype == DType::kInt8)
      out.data<int8_t>()[i] = static_cast<int8_t>(v);
    else
      out.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return out;
}

PoolSetup setup_pool(CpuContext& ctx) {
  PoolSetup s;
  const Tensor& x_in = ctx.input(0);
  s.dtype = x_in.dtype();
  KILNRT_CHECK(!is_8bit(s.dtype) || ctx.node.op_type == "MaxPool", kUnsupported, ctx.node.describe(),
               ctx.node.op_type << " takes float inputs; " << dtype_name(s.dtype) << " is for MaxPool only");
  s.x = pool_input_float32(x_in, ctx.node);
  check_pool_input(s.x.shape(), ctx.node);
  const int nd = s.x.rank() - 2;
  SpatialParams p = read_spatial_params(ctx.node, nd, {}, true);
  std::vector<int64_t> in_spatial(s.x.shape().begin() + 2, s.x.shape().end());
  std::vector<int64_t> out_spatial = pooled_output_dims(p, in_spatial, ctx.node);
  s.g = make_geometry3(p, in_spatial, out_spatial, ctx.node);
  s.y_shape = {s.x.dim(0), s.x.dim(1)};
  s.y_shape.insert(s.y_shape.end(), out_spatial.begin(), out_spatial.end());
  s.planes = s.x.dim(0) * s.x.dim(1);
  return s;
}

// Calls fn(out_row, in_row, off_w, lo, hi) for every kernel tap and every output row (od, oh) whose tap lands
// inside the input: out_row / in_row are element offsets of the rows within a plane, and output positions
// ow in [lo, hi) read input column ow * s + off_w. Kernels written this way vectorise over ow.
template <typename Fn>
void for_each_tap_row(const Geometry3& g, Fn&& fn) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t off_w = kw * g.d[2] - g.pad_begin[2];
        int64_t lo = 0, hi = 0;
        valid_output_range(off_w, g.s[2], g.in[2], g.out[2], &lo, &hi);
        if (lo >= hi) continue;
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.s[0] - g.pad_begin[0] + kd * g.d[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = oh * g.s[1] - g.pad_begin[1] + kh * g.d[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            fn((od * g.out[1] + oh) * g.out[2], (id * g.in[1] + ih) * g.in[2], off_w, lo, hi);
          }
        }
      }
    }
  }
}

// MaxPool with the Indices output: one window at a time, tracking the arg max. Indices are flat offsets into X:
// (n * C + c) * spatial size + the position within the plane, row major (storage_order 0: the last spatial dim
// varies fastest) or column major (storage_order 1: the first spatial dim varies fastest).
void max_pool_with_indices(const PoolSetup& s, bool column_major, float* yp, int64_t* ip) {
  const Geometry3& g = s.g;
  const float* xp = s.x.data<float>();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
#pragma omp parallel for schedule(static) if (s.planes * out_size * g.k_size() > 32768)
  for (int64_t plane = 0; plane < s.planes; ++plane) {
    const float* xc = xp + plane * in_size;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_index = -1, best_col = 0;
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = od * g.s[0] - g.pad_begin[0] + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = oh * g.s[1] - g.pad_begin[1] + kh * g.d[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              const int64_t row = (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const int64_t iw = ow * g.s[2] - g.pad_begin[2] + kw * g.d[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                const float v = xc[row + iw];
                // NaN propagates: a NaN compares false, so test it explicitly.
                if (v > best || best_index < 0 || (v != v && best == best)) {
                  best = v;
                  best_index = row + iw;
                  // Unused leading dims of the 3-D geometry have size 1 and coordinate 0.
                  best_col = id + g.in[0] * (ih + g.in[1] * iw);
                }
              }
            }
          }
          const int64_t o = plane * out_size + (od * g.out[1] + oh) * g.out[2] + ow;
          yp[o] = best;
          ip[o] = best_index < 0 ? 0 : plane * in_size + (column_major ? best_col : best_index);
        }
      }
    }
  }
}

void max_pool_cpu(CpuContext& ctx) {
  PoolSetup s = setup_pool(ctx);
  const bool want_indices = ctx.wants_output(1);
  const int64_t storage_order = ctx.node.attr_int("storage_order", 0);
  KILNRT_CHECK(storage_order == 0 || storage_order == 1, kInvalidModel, ctx.node.describe(),
               "storage_order must be 0 (row major) or 1 (column major), got " << storage_order);
  const Geometry3& g = s.g;
  Tensor y = Tensor::empty(DType::kFloat32, s.y_shape);
  if (want_indices) {
    Tensor indices = Tensor::empty(DType::kInt64, s.y_shape);
    max_pool_with_indices(s, storage_order == 1, y.data<float>(), indices.data<int64_t>());
    ctx.outputs[0] = pool_output(y, s.dtype);
    ctx.outputs[1] = indices;
    return;
  }
  const float* xp = s.x.data<float>();
  float* yp = y.data<float>();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
#pragma omp parallel for schedule(static) if (s.planes * out_size * g.k_size() > 32768)
  for (int64_t plane = 0; plane < s.planes; ++plane) {
    const float* xc = xp + plane * in_size;
    float* yc = yp + plane * out_size;
    for (int64_t i = 0; i < out_size; ++i) yc[i] = -std::numeric_limits<float>::infinity();
    for_each_tap_row(g, [&](int64_t out_row, int64_t in_row, int64_t off_w, int64_t lo, int64_t hi) {
      float* yr = yc + out_row;
      const float* xr = xc + in_row;
      const int64_t sw = g.s[2];
      for (int64_t ow = lo; ow < hi; ++ow) {
        const float v = xr[ow * sw + off_w];
        // NaN propagates: once yr is NaN nothing replaces it; a NaN v replaces anything.
        yr[ow] = (v > yr[ow] || v != v) ? v : yr[ow];
      }
    });
  }
  ctx.outputs[0] = pool_output(y, s.dtype);
}

// Per-dim window counts: positions j*dil + o*stride - pad_begin (j < k) inside [lo, hi), for each output o.
std::vector<int64_t> window_counts(int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad_begin, int64_t lo,
                                   int64_t hi) {
  std::vector<int64_t> counts(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    int64_t c = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = start + j * dil;
      c += (v >= lo && v < hi) ? 1 : 0;
    }
    counts[o] = c;
  }
  return counts;
}

void average_pool_cpu(CpuContext& ctx) {
  PoolSetup s = setup_pool(ctx);
  const bool include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
  const Geometry3& g = s.g;
  // Divisors: positions inside the input, or (count_include_pad) inside the padded extent — the ceil_mode
  // overhang beyond the end pad never counts.
  std::vector<int64_t> counts[3];
  for (int i = 0; i < 3; ++i) {
    counts[i] = window_counts(g.out[i], g.k[i], g.s[i], g.d[i], g.pad_begin[i], include_pad ? -g.pad_begin[i] : 0,
                              include_pad ? g.in[i] + g.pad_end[i] : g.in[i]);
  }
  Tensor y = Tensor::empty(DType::kFloat32, s.y_shape);
  const float* xp = s.x.data<float>();
  float* yp = y.data<float>();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
#pragma omp parallel for schedule(static) if (s.planes * out_size * g.k_size() > 32768)
  for (int64_t plane = 0; plane < s.planes; ++plane) {
    const float* xc = xp + plane * in_size;
    float* yc = yp + plane * out_size;
    for (int64_t i = 0; i < out_size; ++i) yc[i] = 0.f;
    for_each_tap_row(g, [&](int64_t out_row, int64_t in_row, int64_t off_w, int64_t lo, int64_t hi) {
      float* yr = yc + out_row;
      const float* xr = xc + in_row;
      const int64_t sw = g.s[2];
      for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += xr[ow * sw + off_w];
    });
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        float* yr = yc + (od * g.out[1] + oh) * g.out[2];
        const int64_t c_dh = counts[0][od] * counts[1][oh];
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t c = c_dh * counts[2][ow];
          yr[ow] = c > 0 ? yr[ow] / static_cast<float>(c) : 0.f;
        }
      }
    }
  }
  ctx.outputs[0] = from_float32(y, s.dtype);
}

// LpPool: (sum over the window of |x|^p)^(1/p); padding contributes 0.
void lp_pool_cpu(CpuContext& ctx) {
  PoolSetup s = setup_pool(ctx);
  const double p = static_cast<double>(ctx.node.attr_int("p", 2));
  KILNRT_CHECK(p >= 1, kInvalidModel, ctx.node.describe(), "p must be >= 1, got " << p);
  const Geometry3& g = s.g;
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  std::vector<double> acc(static_cast<size_t>(s.planes * out_size), 0.0);
  const float* xp = s.x.data<float>();
  for (int64_t plane = 0; plane < s.planes; ++plane) {
    const float* xc = xp + plane * in_size;
    double* ac = acc.data() + plane * out_size;
    for_each_tap_row(g, [&](int64_t out_row, int64_t in_row, int64_t off_w, int64_t lo, int64_t hi) {
      for (int64_t ow = lo; ow < hi; ++ow) {
        const double v = std::fabs(static_cast<double>(xc[in_row + ow * g.s[2] + off_w]));
        ac[out_row + ow] += p == 2 ? v * v : p == 1 ? v : std::pow(v, p);
      }
    });
  }
  Tensor y = Tensor::empty(DType::kFloat32, s.y_shape);
  float* yp = y.data<float>();
  for (size_t i = 0; i < acc.size(); ++i)
    yp[i] = static_cast<float>(p == 2 ? std::sqrt(acc[i]) : p == 1 ? acc[i] : std::pow(acc[i], 1.0 / p));
  ctx.outputs[0] = from_float32(y, s.dtype);
}

void infer_global_pool(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  check_pool_input(ir::sym_shape_to_shape(x.shape), ctx.node);
  ir::SymShape out = {x.shape[0], x.shape[1]};
  for (size_t i = 2; i < x.shape.size(); ++i) out.push_back(ir::Dim(1));
  ctx.set_output(0, x.dtype, out);
}

template <bool kMax>
void global_pool_cpu(CpuContext& ctx) {
  const Tensor& x_in = ctx.input(0);
  const DType dtype = x_in.dtype();
  Tensor x = to_float32(x_in, ctx.node, "X");
  check_pool_input(x.shape(), ctx.node);
  Shape y_shape = {x.dim(0), x.dim(1)};
  for (int i = 2; i < x.rank(); ++i) y_shape.push_back(1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = dims_product(x.shape(), 2, x.rank());
  KILNRT_CHECK(size > 0 || planes == 0, kInvalidArgument, ctx.node.describe(),
               "cannot pool over empty spatial dims of " << shape_to_string(x.shape()));
  Tensor y = Tensor::empty(DType::kFloat32, y_shape);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (planes * size > 32768)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xc = xp + plane * size;
    if (kMax) {
      float best = xc[0];
      for (int64_t i = 1; i < size; ++i) {
        if (xc[i] > best || xc[i] != xc[i]) best = xc[i];
        if (best != best) break;
      }
      yp[plane] = best;
    } else {
      double sum = 0.0;
      for (int64_t i = 0; i < size; ++i) sum += xc[i];
      yp[plane] = static_cast<float>(sum / static_cast<double>(size));
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

const std::vector<DType>& max_pool_dtypes() {
  static const std::vector<DType> d = [] {
    std::vector<DType> v = float_dtypes();
    v.push_back(DType::kInt8);
    v.push_back(DType::kUInt8);
    return v;
  }();
  return d;
}

KILNRT_REGISTER_OP(OpSchema{"", "MaxPool", 1, 1000, infer_pool, max_pool_cpu, max_pool_dtypes(),
                            "max pool (1-D..3-D on CPU; float, int8, uint8): pads, strides, dilations, ceil_mode, "
                            "auto_pad, Indices (row / column major)"});
KILNRT_REGISTER_OP(OpSchema{"", "AveragePool", 1, 1000, infer_pool, average_pool_cpu, float_dtypes(),
                            "average pool (1-D..3-D on CPU): count_include_pad, ceil_mode, dilations, auto_pad"});
KILNRT_REGISTER_OP(OpSchema{"", "LpPool", 1, 1000, infer_pool, lp_pool_cpu, float_dtypes(),
                            "(sum of |x|^p over the window)^(1/p): pads, strides, dilations, auto_pad, ceil_mode"});
KILNRT_REGISTER_OP(OpSchema{"", "GlobalAveragePool", 1, 1000, infer_global_pool, global_pool_cpu<false>, float_dtypes(),
                            "mean over all spatial dims"});
KILNRT_REGISTER_OP(OpSchema{"", "GlobalMaxPool", 1, 1000, infer_global_pool, global_pool_cpu<true>, float_dtypes(),
                            "max over all spatial dims"});

}  // namespace
}  // namespace kilnrt::ops::nn
