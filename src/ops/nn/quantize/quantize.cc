// Quantization ops (reference kernels, computed in double): QuantizeLinear / DequantizeLinear (10, 13: per-tensor
// or per-axis; 21: blocked, 16-bit integers), DynamicQuantizeLinear (11), MatMulInteger / QLinearMatMul (10),
// ConvInteger / QLinearConv (10). Rounding is half to even (std::nearbyint), saturation to the output type's range.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

double saturate(double v, DType t) {
  double lo = 0, hi = 255;
  if (t == DType::kInt8) lo = -128, hi = 127;
  if (t == DType::kInt16) lo = -32768, hi = 32767;
  if (t == DType::kUInt16) lo = 0, hi = 65535;
  return std::min(std::max(v, lo), hi);
}

// Per-element parameter (scale or zero point) broadcast along `axis` (1-D of the axis' length) or per tensor.
std::vector<double> expand_param(const Tensor* p, const Shape& shape, int64_t axis, double dflt, const ir::Node& node,
                                 size_t* stride_out, int64_t* len_out) {
  std::vector<double> v = p ? tensor_to_doubles(*p, node) : std::vector<double>{dflt};
  if (v.empty()) v = {dflt};
  *len_out = 1;
  *stride_out = 1;
  if (v.size() > 1) {
    const int64_t a = normalize_axis(axis, static_cast<int64_t>(shape.size()), node);
    KILNRT_CHECK(static_cast<int64_t>(v.size()) == shape[static_cast<size_t>(a)], kInvalidArgument, node.describe(),
                 "per-axis parameter has " << v.size() << " values for axis " << a << " of size " << shape[a]);
    size_t inner = 1;
    for (size_t d = static_cast<size_t>(a) + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
    *stride_out = inner;
    *len_out = static_cast<int64_t>(v.size());
  }
  return v;
}

// Blocked quantization (opset 21, block_size > 0): the parameter has X's rank, with ceil(len / block_size) entries
// along `axis`; element (.., i_axis, ..) reads parameter (.., i_axis / block_size, ..). Returns per-element values.
std::vector<double> blocked_param(const Tensor& p, const Shape& shape, int64_t axis, int64_t block,
                                  const ir::Node& node) {
  const std::vector<double> v = tensor_to_doubles(p, node);
  const Shape& ps = p.shape();
  const size_t rank = shape.size();
  const auto a = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(rank), node));
  bool ok = ps.size() == rank;
  for (size_t d = 0; ok && d < rank; ++d) ok = d == a ? ps[d] == (shape[d] + block - 1) / block : ps[d] == shape[d];
  KILNRT_CHECK(ok, kInvalidArgument, node.describe(),
               "blocked parameter of shape " << shape_to_string(ps) << " does not match input "
                                             << shape_to_string(shape) << " with block_size " << block << " on axis "
                                             << a);
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<double> out(static_cast<size_t>(total));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off = off * ps[d] + (d == a ? idx[d] / block : idx[d]);
    out[static_cast<size_t>(i)] = v[static_cast<size_t>(off)];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Scale and zero point for every element of X: per tensor, per axis (1-D) or blocked (block_size > 0).
void element_params(const CpuContext& ctx, const Shape& shape, std::vector<double>* scales,
                    std::vector<double>* zeros) {
  const int64_t axis = ctx.node.attr_int("axis", 1);
  const int64_t block = ctx.node.attr_int("block_size", 0);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (block > 0 && ctx.input(1).numel() > 1) {
    *scales = blocked_param(ctx.input(1), shape, axis, block, ctx.node);
    *zeros =
        zp ? blocked_param(*zp, shape, axis, block, ctx.node) : std::vector<double>(static_cast<size_t>(total), 0.0);
    return;
  }
  size_t ss, zs;
  int64_t sl, zl;
  const std::vector<double> sc = expand_param(&ctx.input(1), shape, axis, 1.0, ctx.node, &ss, &sl);
  const std::vector<double> z = expand_param(zp, shape, axis, 0.0, ctx.node, &zs, &zl);
  scales->resize(static_cast<size_t>(total));
  zeros->resize(static_cast<size_t>(total));
  for (size_t i = 0; i < scales->size(); ++i) {
    (*scales)[i] = sc[sl > 1 ? (i / ss) % static_cast<size_t>(sl) : 0];
    (*zeros)[i] = z[zl > 1 ? (i / zs) % static_cast<size_t>(zl) : 0];
  }
}

void quantize_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  DType out_t = zp ? zp->dtype() : DType::kUInt8;
  if (!zp && ctx.node.attr_int("output_dtype", 0) != 0) out_t = static_cast<DType>(ctx.node.attr_int("output_dtype"));
  KILNRT_CHECK(out_t == DType::kUInt8 || out_t == DType::kInt8 || out_t == DType::kUInt16 || out_t == DType::kInt16,
               kUnsupported, ctx.node.describe(),
               "output dtype " << dtype_name(out_t) << " (uint8, int8, uint16 and int16 are supported)");
  std::vector<double> sc, z;
  element_params(ctx, x.shape(), &sc, &z);
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  for (size_t i = 0; i < v.size(); ++i) {
    const double s = sc[i];
    const double zz = z[i];
    // float32 inputs divide in float32, as ONNX's reference does (the quotient's rounding decides ties).
    const double q =
        x.dtype() == DType::kFloat32 ? static_cast<double>(static_cast<float>(v[i]) / static_cast<float>(s)) : v[i] / s;
    v[i] = saturate(std::nearbyint(q) + zz, out_t);
  }
  ctx.outputs[0] = tensor_from_doubles(v, out_t, x.shape());
}

void dequantize_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<double> sc, z;
  element_params(ctx, x.shape(), &sc, &z);
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  for (size_t i = 0; i < v.size(); ++i) {
    const double s = sc[i];
    const double zz = z[i];
    v[i] = (v[i] - zz) * s;
  }
  ctx.outputs[0] = tensor_from_doubles(v, ctx.input(1).dtype(), x.shape());
}

void dynamic_quantize_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<double> v = tensor_to_doubles(x, ctx.node);
  double lo = 0, hi = 0;
  for (double e : v) {
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  // In float32, as ONNX's reference (and its expanded function body) computes it.
  const float scale = static_cast<float>(hi - lo) / 255.f;
  const double zp =
      scale != 0 ? saturate(std::nearbyint(static_cast<double>(-static_cast<float>(lo) / scale)), DType::kUInt8) : 0.0;
  for (double& e : v)
    e = scale != 0 ? saturate(std::nearbyint(static_cast<double>(static_cast<float>(e) / scale)) + zp, DType::kUInt8)
                   : zp;
  ctx.outputs[0] = tensor_from_doubles(v, DType::kUInt8, x.shape());
  if (ctx.wants_output(1)) ctx.outputs[1] = tensor_from_doubles({scale}, DType::kFloat32, {});
  if (ctx.wants_output(2)) ctx.outputs[2] = tensor_from_doubles({zp}, DType::kUInt8, {});
}

// ---- integer matmul ---------------------------------------------------------------------------------------------

// (a - azp) @ (b - bzp) in double, numpy matmul broadcasting; azp per-tensor or per-row (M), bzp per-tensor or
// per-column (N).
std::vector<double> matmul_zp(const Tensor& at, const Tensor* azp_t, const Tensor& bt, const Tensor* bzp_t,
                              const ir::Node& node, Shape* out_shape) {
  Shape as = at.shape(), bs = bt.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  KILNRT_CHECK(bs[bs.size() - 2] == K, kInvalidArgument, node.describe(),
               "inner dims differ: " << shape_to_string(at.shape()) << " x " << shape_to_string(bt.shape()));
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_shapes(ab, bb, node);
  const std::vector<double> a = tensor_to_doubles(at, node), b = tensor_to_doubles(bt, node);
  const std::vector<double> azp = azp_t ? tensor_to_doubles(*azp_t, node) : std::vector<double>{0.0};
  const std::vector<double> bzp = bzp_t ? tensor_to_doubles(*bzp_t, node) : std::vector<double>{0.0};
  // A zero point is a scalar / 1-element tensor, or per row of A (M values) / per column of B (N values).
  KILNRT_CHECK(azp.size() == 1 || static_cast<int64_t>(azp.size()) == M, kInvalidArgument, node.describe(),
               "a_zero_point has " << azp.size() << " elements: expected 1 or " << M << " (rows of A)");
  KILNRT_CHECK(bzp.size() == 1 || static_cast<int64_t>(bzp.size()) == N, kInvalidArgument, node.describe(),
               "b_zero_point has " << bzp.size() << " elements: expected 1 or " << N << " (columns of B)");
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  std::vector<double> y(static_cast<size_t>(nb * M * N), 0.0);
  auto offset = [&](const Shape& s, int64_t flat) {  // broadcast batch index into a source batch shape
    int64_t off = 0, stride = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = flat % batch[d];
      flat /= batch[d];
      const size_t sd = d + s.size() - batch.size();
      if (d + s.size() >= batch.size() && sd < s.size()) {
        off += (s[sd] == 1 ? 0 : idx) * stride;
        stride *= s[sd];
      }
    }
    return off;
  };
  for (int64_t bi = 0; bi < nb; ++bi) {
    const double* ap = a.data() + offset(ab, bi) * M * K;
    const double* bp = b.data() + offset(bb, bi) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const double za = azp.size() > 1 ? azp[static_cast<size_t>(m)] : azp[0];
        const double zb = bzp.size() > 1 ? bzp[static_cast<size_t>(n)] : bzp[0];
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += (ap[m * K + k] - za) * (bp[k * N + n] - zb);
        y[static_cast<size_t>((bi * M + m) * N + n)] = s;
      }
  }
  Shape out = batch;
  if (!a1) out.push_back(M);
  if (!b1) out.push_back(N);
  *out_shape = out;
  return y;
}

void matmul_integer_cpu(CpuContext& ctx) {
  Shape out;
  std::vector<double> y = matmul_zp(ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr, ctx.input(1),
                                    ctx.has_input(3) ? &ctx.input(3) : nullptr, ctx.node, &out);
  ctx.outputs[0] = tensor_from_doubles(y, DType::kInt32, out);
}

double scalar_of(const Tensor& t, const ir::Node& node) {
  const std::vector<double> v = tensor_to_doubles(t, node);
  KILNRT_CHECK(!v.empty(), kInvalidArgument, node.describe(),
               "a scale / zero-point input is empty (expected a scalar)");
  return v[0];
}

void qlinear_matmul_cpu(CpuContext& ctx) {
  Shape out;
  std::vector<double> y = matmul_zp(ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), ctx.node, &out);
  const double as = scalar_of(ctx.input(1), ctx.node), bs = scalar_of(ctx.input(4), ctx.node);
  const double ys = scalar_of(ctx.input(6), ctx.node), yz = scalar_of(ctx.input(7), ctx.node);
  const DType t = ctx.input(7).dtype();
  // Scales are float32 in the model; the reference multiplies in float32 before rounding.
  for (double& v : y) v = saturate(std::nearbyint(static_cast<float>(v * as * bs / ys)) + yz, t);
  ctx.outputs[0] = tensor_from_doubles(y, t, out);
}

// ---- integer convolution ----------------------------------------------------------------------------------------

// Naive grouped N-D (1..3) convolution of (x - xzp) and (w - wzp) in double; returns [N, M, out...].
std::vector<double> conv_zp(const Tensor& xt, double xzp, const Tensor& wt, const std::vector<double>& wzp,
                            const ir::Node& node, Shape* out_shape) {
  const int nd = static_cast<int>(xt.rank()) - 2;
  KILNRT_CHECK(nd >= 1 && nd <= 3 && wt.rank() == xt.rank(), kUnsupported, node.describe(),
               "1-D to 3-D convolutions are supported");
  std::vector<int64_t> kshape(wt.shape().begin() + 2, wt.shape().end());
  SpatialParams p = read_spatial_params(node, nd, kshape, false);
  std::vector<int64_t> in_sp(xt.shape().begin() + 2, xt.shape().end());
  std::vector<int64_t> out_sp = pooled_output_dims(p, in_sp, node);
  const Geometry3 g = make_geometry3(p, in_sp, out_sp, node);
  const int64_t N = xt.shape()[0], C = xt.shape()[1], M = wt.shape()[0];
  const int64_t group = node.attr_int("group", 1);
  KILNRT_CHECK(group >= 1 && C % group == 0 && M % group == 0 && wt.shape()[1] == C / group, kInvalidModel,
               node.describe(),
               "weight shape " << shape_to_string(wt.shape()) << " does not fit " << C << " input channels in " << group
                               << " groups");
  KILNRT_CHECK(wzp.size() == 1 || wzp.size() == static_cast<size_t>(M), kInvalidArgument, node.describe(),
               "weight zero point has " << wzp.size() << " values, expected 1 or " << M);
  const int64_t cg = C / group, mg = M / group;
  const std::vector<double> x = tensor_to_doubles(xt, node), w = tensor_to_doubles(wt, node);
  std::vector<double> y(static_cast<size_t>(N * M * g.out_size()), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t gi = m / mg;
      const double zw = wzp.size() > 1 ? wzp[static_cast<size_t>(m)] : wzp[0];
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            double s = 0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i0 = o0 * g.s[0] - g.pad_begin[0] + k0 * g.d[0];
                    const int64_t i1 = o1 * g.s[1] - g.pad_begin[1] + k1 * g.d[1];
                    const int64_t i2 = o2 * g.s[2] - g.pad_begin[2] + k2 * g.d[2];
                    const double wv =
                        w[static_cast<size_t>((((m * cg + c) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2)] - zw;
                    double xv = 0;  // padding holds the zero point: (x - xzp) = 0
                    if (i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] && i2 >= 0 && i2 < g.in[2])
                      xv = x[static_cast<size_t>((((n * C + gi * cg + c) * g.in[0] + i0) * g.in[1] + i1) * g.in[2] +
                                                 i2)] -
                           xzp;
                    s += xv * wv;
                  }
            y[static_cast<size_t>(((n * M + m) * g.out[0] + o0) * g.out[1] * g.out[2] + o1 * g.out[2] + o2)] = s;
          }
    }
  Shape out{N, M};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  *out_shape = out;
  return y;
}

void conv_integer_cpu(CpuContext& ctx) {
  const double xzp = ctx.has_input(2) ? scalar_of(ctx.input(2), ctx.node) : 0.0;
  const std::vector<double> wzp = ctx.has_input(3) ? tensor_to_doubles(ctx.input(3), ctx.node) : std::vector<double>{0};
  Shape out;
  std::vector<double> y = conv_zp(ctx.input(0), xzp, ctx.input(1), wzp, ctx.node, &out);
  ctx.outputs[0] = tensor_from_doubles(y, DType::kInt32, out);
}

void qlinear_conv_cpu(CpuContext& ctx) {
  const double xs = scalar_of(ctx.input(1), ctx.node), xzp = scalar_of(ctx.input(2), ctx.node);
  const std::vector<double> ws = tensor_to_doubles(ctx.input(4), ctx.node);
  const std::vector<double> wzp = tensor_to_doubles(ctx.input(5), ctx.node);
  const double ys = scalar_of(ctx.input(6), ctx.node), yz = scalar_of(ctx.input(7), ctx.node);
  Shape out;
  std::vector<double> y = conv_zp(ctx.input(0), xzp, ctx.input(3), wzp, ctx.node, &out);
  const std::vector<double> bias = ctx.has_input(8) ? tensor_to_doubles(ctx.input(8), ctx.node) : std::vector<double>{};
  const int64_t M = out[1];
  KILNRT_CHECK((ws.size() == 1 || ws.size() == static_cast<size_t>(M)) &&
                   (bias.empty() || bias.size() == static_cast<size_t>(M)),
               kInvalidArgument, ctx.node.describe(), "w_scale / bias must hold 1 or " << M << " values");
  int64_t sp = 1;
  for (size_t d = 2; d < out.size(); ++d) sp *= out[d];
  const DType t = ctx.input(7).dtype();
  for (size_t i = 0; i < y.size(); ++i) {
    const auto m = static_cast<size_t>((static_cast<int64_t>(i) / sp) % M);
    const double acc = y[i] + (bias.empty() ? 0.0 : bias[m]);
    const double w_scale = ws.size() > 1 ? ws[m] : ws[0];
    y[i] = saturate(std::nearbyint(static_cast<float>(acc * xs * w_scale / ys)) + yz, t);
  }
  ctx.outputs[0] = tensor_from_doubles(y, t, out);
}

// ---- shape functions --------------------------------------------------------------------------------------------

void infer_quantize(ShapeContext& ctx) {
  DType t = ctx.has_input(2) ? ctx.input(2).dtype : DType::kUInt8;
  if (!ctx.has_input(2) && ctx.node.attr_int("output_dtype", 0) != 0)
    t = static_cast<DType>(ctx.node.attr_int("output_dtype"));
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, t, x.shape);
  else
    ctx.set_output_rank_unknown(0, t);
}
void infer_dequantize(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, ctx.input(1).dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, ctx.input(1).dtype);
}
void infer_dynamic_quantize(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, DType::kUInt8, x.shape);
  else
    ctx.set_output_rank_unknown(0, DType::kUInt8);
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) ctx.set_output(1, DType::kFloat32, {});
  if (ctx.outputs.size() > 2 && !ctx.node.outputs[2].empty()) ctx.set_output(2, DType::kUInt8, {});
}
// Matmul / conv outputs: rank from the inputs, dims left symbolic (the CPU kernel computes them).
void infer_matmul_like(ShapeContext& ctx, size_t b_index, DType t) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(b_index);
  if (!a.has_shape || !b.has_shape) {
    ctx.set_output_rank_unknown(0, t);
    return;
  }
  const size_t rank = std::max(a.shape.size(), b.shape.size()) - (a.shape.size() == 1 || b.shape.size() == 1 ? 1 : 0);
  if (!ir::sym_shape_known(a.shape) || !ir::sym_shape_known(b.shape) || a.shape.empty() || b.shape.empty()) {
    ctx.set_output(0, t, ir::SymShape(rank, ir::Dim()));
    return;
  }
  // Concrete dims when both shapes are known (the CUDA backend needs them): numpy matmul broadcasting.
  Shape as = ir::sym_shape_to_shape(a.shape), bs = ir::sym_shape_to_shape(b.shape);
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  Shape out = broadcast_shapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), ctx.node);
  if (!a1) out.push_back(as[as.size() - 2]);
  if (!b1) out.push_back(bs.back());
  ctx.set_output(0, t, ir::shape_to_sym(out));
}
void infer_conv_like(ShapeContext& ctx, DType t, size_t w_index) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, t);
    return;
  }
  ir::SymShape out(x.shape.size(), ir::Dim());
  const ir::TensorType& w = ctx.input(w_index);
  // Known dims when W's shape is known (the CUDA backend needs them): N, M, the convolution's spatial dims.
  if (x.shape.size() >= 3 && x.shape.size() <= 5 && w.has_shape && w.shape.size() == x.shape.size() &&
      ir::sym_shape_known(w.shape)) {
    const int nd = static_cast<int>(x.shape.size()) - 2;
    std::vector<int64_t> k;
    for (size_t i = 2; i < w.shape.size(); ++i) k.push_back(w.shape[i].value);
    const SpatialParams p = read_spatial_params(ctx.node, nd, k, false);
    const ir::SymShape sp = pooled_output_sym_dims(p, ir::SymShape(x.shape.begin() + 2, x.shape.end()), ctx.node);
    out[0] = x.shape[0];
    out[1] = w.shape[0];
    for (size_t i = 0; i < sp.size(); ++i) out[2 + i] = sp[i];
  }
  ctx.set_output(0, t, out);
}

const std::vector<DType> kQuantIn = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt32};
KILNRT_REGISTER_OP(OpSchema{"", "QuantizeLinear", 10, 1000, infer_quantize, quantize_cpu, kQuantIn,
                            "saturate(round_half_even(x / scale) + zero_point), per tensor, per axis or blocked"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "DequantizeLinear",
                            10,
                            1000,
                            infer_dequantize,
                            dequantize_cpu,
                            {DType::kUInt8, DType::kInt8, DType::kInt32},
                            "(x - zero_point) * scale, per tensor, per axis or blocked"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "DynamicQuantizeLinear",
                            11,
                            1000,
                            infer_dynamic_quantize,
                            dynamic_quantize_cpu,
                            {DType::kFloat32},
                            "uint8 quantization with scale/zero point from the data's range"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "MatMulInteger",
                            10,
                            1000,
                            [](ShapeContext& c) { infer_matmul_like(c, 1, DType::kInt32); },
                            matmul_integer_cpu,
                            {DType::kUInt8, DType::kInt8},
                            "(a - a_zero_point) @ (b - b_zero_point) in int32"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "QLinearMatMul",
                            10,
                            1000,
                            [](ShapeContext& c) { infer_matmul_like(c, 3, c.input(7).dtype); },
                            qlinear_matmul_cpu,
                            {DType::kUInt8, DType::kInt8},
                            "quantized matmul with requantization to y_scale/y_zp"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "ConvInteger",
                            10,
                            1000,
                            [](ShapeContext& c) { infer_conv_like(c, DType::kInt32, 1); },
                            conv_integer_cpu,
                            {DType::kUInt8, DType::kInt8},
                            "convolution of (x - x_zero_point) and (w - w_zero_point) in int32"});
KILNRT_REGISTER_OP(OpSchema{"",
                            "QLinearConv",
                            10,
                            1000,
                            [](ShapeContext& c) { infer_conv_like(c, c.input(7).dtype, 3); },
                            qlinear_conv_cpu,
                            {DType::kUInt8, DType::kInt8},
                            "quantized convolution with int32 bias, requantized"});

}  // namespace
}  // namespace kilnrt::ops::nn
