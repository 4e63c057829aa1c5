#include "ops/nn/nn_common.h"

#include <cblas.h>

#include <climits>

#include "core/check.h"

namespace kilnrt::ops::nn {

const std::vector<DType>& float_dtypes() {
  static const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  return dtypes;
}

void check_float_input(const Tensor& t, const ir::Node& node, const char* input_name) {
  DType dt = t.dtype();
  KILNRT_CHECK(dt == DType::kFloat32 || dt == DType::kFloat16 || dt == DType::kBFloat16, kUnsupported, node.describe(),
               "input " << input_name << " has dtype " << dtype_name(dt)
                        << "; the CPU kernel supports float32, float16 and bfloat16");
}

Tensor to_float32(const Tensor& t, const ir::Node& node, const char* input_name) {
  check_float_input(t, node, input_name);
  if (t.dtype() == DType::kFloat32) return t;
  Tensor out = Tensor::empty(DType::kFloat32, t.shape());
  const uint16_t* src = t.data<uint16_t>();
  float* dst = out.data<float>();
  const int64_t n = t.numel();
  if (t.dtype() == DType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
  }
  return out;
}

Tensor from_float32(const Tensor& t, DType dtype) {
  if (dtype == DType::kFloat32) return t;
  Tensor out = Tensor::empty(dtype, t.shape());
  const float* src = t.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  const int64_t n = t.numel();
  if (dtype == DType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
  } else if (dtype == DType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bfloat16(src[i]);
  } else {
    KILNRT_THROW(kInternal, "", "from_float32: cannot convert to " << dtype_name(dtype));
  }
  return out;
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const ir::Node& node) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.f ? 0.f : beta * row[j];
    }
    return;
  }
  KILNRT_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX,
               kUnsupported, node.describe(),
               "matrix product " << m << "x" << k << " * " << k << "x" << n << " exceeds the BLAS int range");
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

SpatialParams read_spatial_params(const ir::Node& node, int nd, const std::vector<int64_t>& kernel_from_weights,
                                  bool allow_ceil_mode) {
  SpatialParams p;
  p.nd = nd;
  const std::string where = node.describe();
  KILNRT_CHECK(nd >= 1, kInvalidArgument, where, "needs at least one spatial dimension (input rank >= 3)");
  if (node.has_attr("kernel_shape")) {
    p.kernel = node.attr_ints("kernel_shape");
  } else {
    KILNRT_CHECK(!kernel_from_weights.empty(), kInvalidModel, where, "attribute kernel_shape is required");
    p.kernel = kernel_from_weights;
  }
  KILNRT_CHECK(static_cast<int>(p.kernel.size()) == nd, kInvalidModel, where,
               "kernel_shape has " << p.kernel.size() << " dims but the input has " << nd << " spatial dims");
  if (!kernel_from_weights.empty()) {
    KILNRT_CHECK(p.kernel == kernel_from_weights, kInvalidModel, where,
                 "kernel_shape " << shape_to_string(p.kernel) << " differs from the weights' spatial shape "
                                 << shape_to_string(kernel_from_weights));
  }
  p.strides = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  p.dilations = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  p.pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  p.auto_pad = node.attr_string("auto_pad", std::string("NOTSET"));
  if (allow_ceil_mode) p.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  KILNRT_CHECK(static_cast<int>(p.strides.size()) == nd, kInvalidModel, where,
               "strides has " << p.strides.size() << " values, expected " << nd);
  KILNRT_CHECK(static_cast<int>(p.dilations.size()) == nd, kInvalidModel, where,
               "dilations has " << p.dilations.size() << " values, expected " << nd);
  KILNRT_CHECK(static_cast<int>(p.pads.size()) == 2 * nd, kInvalidModel, where,
               "pads has " << p.pads.size() << " values, expected " << 2 * nd);
  for (int i = 0; i < nd; ++i) {
    KILNRT_CHECK(p.kernel[i] >= 1, kInvalidModel, where, "kernel_shape[" << i << "] = " << p.kernel[i]);
    KILNRT_CHECK(p.strides[i] >= 1, kInvalidModel, where, "strides[" << i << "] = " << p.strides[i]);
    KILNRT_CHECK(p.dilations[i] >= 1, kInvalidModel, where, "dilations[" << i << "] = " << p.dilations[i]);
  }
  for (int64_t v : p.pads) KILNRT_CHECK(v >= 0, kInvalidModel, where, "negative pad " << v);
  KILNRT_CHECK(
      p.auto_pad == "NOTSET" || p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER" || p.auto_pad == "VALID",
      kInvalidModel, where, "unknown auto_pad '" << p.auto_pad << "'");
  if (p.auto_pad != "NOTSET") p.pads.assign(2 * nd, 0);
  return p;
}

int64_t pooled_output_dim(SpatialParams& p, int i, int64_t in, const ir::Node& node) {
  const int64_t ek = p.effective_kernel(i);
  const int64_t s = p.strides[i];
  int64_t out = 0;
  if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
    out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + ek - in;
    if (total < 0) total = 0;
    int64_t small = total / 2;
    p.pads[i] = p.auto_pad == "SAME_UPPER" ? small : total - small;
    p.pads[i + p.nd] = total - p.pads[i];
  } else {
    if (p.auto_pad == "VALID") p.pads[i] = p.pads[i + p.nd] = 0;
    const int64_t span = in + p.pads[i] + p.pads[i + p.nd] - ek;
    KILNRT_CHECK(span >= 0, kInvalidArgument, node.describe(),
                 "spatial dim " << i << " of size " << in << " (padded by " << p.pads[i] << "+" << p.pads[i + p.nd]
                                << ") is smaller than the effective kernel size " << ek);
    if (p.ceil_mode) {
      out = (span + s - 1) / s + 1;
      // The last window must start inside the input or the begin padding.
      if ((out - 1) * s >= in + p.pads[i]) --out;
    } else {
      out = span / s + 1;
    }
  }
  return out;
}

std::vector<int64_t> pooled_output_dims(SpatialParams& p, const std::vector<int64_t>& in, const ir::Node& node) {
  std::vector<int64_t> out(p.nd);
  for (int i = 0; i < p.nd; ++i) out[i] = pooled_output_dim(p, i, in[i], node);
  return out;
}

ir::SymShape pooled_output_sym_dims(const SpatialParams& params, const ir::SymShape& in_spatial, const ir::Node& node) {
  ir::SymShape out;
  SpatialParams p = params;
  for (int i = 0; i < p.nd; ++i) {
    if (in_spatial[i].known()) {
      out.push_back(ir::Dim(pooled_output_dim(p, i, in_spatial[i].value, node)));
    } else {
      out.push_back(ir::Dim());
    }
  }
  return out;
}

int64_t dims_product(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

Geometry3 make_geometry3(const SpatialParams& p, const std::vector<int64_t>& in_spatial,
                         const std::vector<int64_t>& out_spatial, const ir::Node& node) {
  KILNRT_CHECK(p.nd >= 1 && p.nd <= 3, kUnsupported, node.describe(),
               p.nd << " spatial dims; the CPU kernel supports 1 to 3");
  Geometry3 g;
  const int off = 3 - p.nd;
  for (int i = 0; i < p.nd; ++i) {
    g.in[off + i] = in_spatial[i];
    g.out[off + i] = out_spatial[i];
    g.k[off + i] = p.kernel[i];
    g.s[off + i] = p.strides[i];
    g.d[off + i] = p.dilations[i];
    g.pad_begin[off + i] = p.pads[i];
    g.pad_end[off + i] = p.pads[i + p.nd];
  }
  return g;
}

void valid_output_range(int64_t offset, int64_t stride, int64_t in_size, int64_t out_size, int64_t* lo, int64_t* hi) {
  // o*stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  int64_t l = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o*stride + offset < in_size  <=>  o < ceil((in_size - offset) / stride)
  int64_t h = in_size - offset <= 0 ? 0 : (in_size - offset + stride - 1) / stride;
  if (l > out_size) l = out_size;
  if (h > out_size) h = out_size;
  if (h < l) h = l;
  *lo = l;
  *hi = h;
}

}  // namespace kilnrt::ops::nn
