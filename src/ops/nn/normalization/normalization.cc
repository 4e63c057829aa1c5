// Normalizations: BatchNormalization (inference), InstanceNormalization, LayerNormalization (with the optional
// Mean / InvStdDev outputs), RMSNormalization, LpNormalization, GroupNormalization (opset 18 per-group and opset 21
// per-channel affine) and LRN.
// Statistics are accumulated in double for the oracle's accuracy.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// Mean and biased variance of x[0..len), two passes in double.
void row_moments(const float* x, int64_t len, double* mean, double* var) {
  double sum = 0.0;
  for (int64_t i = 0; i < len; ++i) sum += x[i];
  const double m = len > 0 ? sum / static_cast<double>(len) : 0.0;
  double sq = 0.0;
  for (int64_t i = 0; i < len; ++i) {
    const double dv = x[i] - m;
    sq += dv * dv;
  }
  *mean = m;
  *var = len > 0 ? sq / static_cast<double>(len) : 0.0;
}

// A per-channel parameter (scale, bias, mean, var) as float32, checked to hold exactly `count` values.
Tensor channel_param(const CpuContext& ctx, size_t index, const char* name, int64_t count) {
  Tensor t = to_float32(ctx.input(index), ctx.node, name);
  KILNRT_CHECK(t.numel() == count && t.rank() <= 1, kInvalidArgument, ctx.node.describe(),
               name << " has shape " << shape_to_string(t.shape()) << ", expected [" << count << "]");
  return t;
}

void check_nc_input(const Shape& x, const ir::Node& node, size_t min_rank) {
  KILNRT_CHECK(x.size() >= min_rank, kInvalidArgument, node.describe(),
               "input X must have rank >= " << min_rank << " (N, C, ...), got shape " << shape_to_string(x));
}

// Output 0 has X's type; used by every op here that keeps the input's shape.
void infer_same_as_input(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape) {
    ctx.set_output(0, x.dtype, x.shape);
  } else {
    ctx.set_output_rank_unknown(0, x.dtype);
  }
}

// ---- BatchNormalization ---------------------------------------------------------------------------------------

// Returns true for training mode (opset 14+: batch statistics, optional running mean / var outputs).
bool check_batch_norm_mode(const ir::Node& node) {
  const bool training = node.attr_int("training_mode", 0) != 0;
  KILNRT_CHECK(node.attr_int("spatial", 1) == 1, kUnsupported, node.describe(), "spatial=0 is not supported");
  for (size_t i = 1; i < node.outputs.size() && !training; ++i) {
    KILNRT_CHECK(node.outputs[i].empty(), kUnsupported, node.describe(),
                 "the running mean / var outputs need training_mode=1 (opset 14+); before opset 14 (the "
                 "saved_mean / saved_var training outputs) they are not supported");
  }
  return training;
}

void infer_batch_norm(ShapeContext& ctx) {
  check_batch_norm_mode(ctx.node);
  infer_same_as_input(ctx);
  for (size_t i = 1; i < ctx.outputs.size() && i < 3; ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    if (ctx.has_input(3) && ctx.input(3).has_shape)
      ctx.set_output(i, ctx.input(3).dtype, ctx.input(3).shape);
    else
      ctx.set_output(i, ctx.input(0).dtype, {ir::Dim()});
  }
}

void batch_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool training = check_batch_norm_mode(node);
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "X");
  check_nc_input(x.shape(), node, 2);
  const int64_t n = x.dim(0), c = x.dim(1), size = dims_product(x.shape(), 2, x.rank());
  Tensor scale = channel_param(ctx, 1, "scale", c), bias = channel_param(ctx, 2, "B", c);
  Tensor mean = channel_param(ctx, 3, "input_mean", c), var = channel_param(ctx, 4, "input_var", c);
  const double eps = node.attr_float("epsilon", 1e-5f);
  if (training) {
    // Batch statistics (population variance) replace the running ones; running outputs are
    // input * momentum + batch * (1 - momentum).
    const double momentum = node.attr_float("momentum", 0.9f);
    Tensor bm = Tensor::empty(DType::kFloat32, {c}), bv = Tensor::empty(DType::kFloat32, {c});
    Tensor rm = Tensor::empty(DType::kFloat32, {c}), rv = Tensor::empty(DType::kFloat32, {c});
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0, sq = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < size; ++i) {
          const double v = x.data<float>()[(b * c + ch) * size + i];
          s += v;
          sq += v * v;
        }
      const double cnt = static_cast<double>(n * size);
      const double m = cnt > 0 ? s / cnt : 0.0, va = cnt > 0 ? std::max(sq / cnt - m * m, 0.0) : 0.0;
      bm.data<float>()[ch] = static_cast<float>(m);
      bv.data<float>()[ch] = static_cast<float>(va);
      rm.data<float>()[ch] = static_cast<float>(mean.data<float>()[ch] * momentum + m * (1 - momentum));
      rv.data<float>()[ch] = static_cast<float>(var.data<float>()[ch] * momentum + va * (1 - momentum));
    }
    mean = bm;
    var = bv;
    if (ctx.wants_output(1)) ctx.outputs[1] = from_float32(rm, ctx.input(3).dtype());
    if (ctx.wants_output(2)) ctx.outputs[2] = from_float32(rv, ctx.input(4).dtype());
  }
  std::vector<float> a(c), b(c);
  for (int64_t i = 0; i < c; ++i) {
    const double inv = 1.0 / std::sqrt(static_cast<double>(var.data<float>()[i]) + eps);
    a[i] = static_cast<float>(scale.data<float>()[i] * inv);
    b[i] = static_cast<float>(bias.data<float>()[i] - mean.data<float>()[i] * scale.data<float>()[i] * inv);
  }
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (n * c * size > 32768)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const float av = a[nc % c], bv = b[nc % c];
    const float* xs = xp + nc * size;
    float* ys = yp + nc * size;
    for (int64_t i = 0; i < size; ++i) ys[i] = xs[i] * av + bv;
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

// ---- InstanceNormalization ------------------------------------------------------------------------------------

void instance_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "input");
  check_nc_input(x.shape(), node, 3);
  const int64_t n = x.dim(0), c = x.dim(1), size = dims_product(x.shape(), 2, x.rank());
  Tensor scale = channel_param(ctx, 1, "scale", c), bias = channel_param(ctx, 2, "B", c);
  const double eps = node.attr_float("epsilon", 1e-5f);
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* sp = scale.data<float>();
  const float* bp = bias.data<float>();
#pragma omp parallel for schedule(static) if (n * c * size > 32768)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const float* xs = xp + nc * size;
    float* ys = yp + nc * size;
    double mean = 0.0, var = 0.0;
    row_moments(xs, size, &mean, &var);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float a = sp[nc % c] * inv;
    const float b = bp[nc % c] - static_cast<float>(mean) * a;
    for (int64_t i = 0; i < size; ++i) ys[i] = xs[i] * a + b;
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

// ---- LayerNormalization ---------------------------------------------------------------------------------------

DType stash_dtype(const ir::Node& node) {
  const int64_t stash = node.attr_int("stash_type", 1);
  KILNRT_CHECK(stash == 1 || stash == 10 || stash == 16, kUnsupported, node.describe(),
               "stash_type " << stash << " is not supported (float32, float16 or bfloat16)");
  return static_cast<DType>(stash);
}

void infer_layer_norm(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const DType stash = stash_dtype(ctx.node);
  infer_same_as_input(ctx);
  for (size_t i = 1; i < ctx.outputs.size() && i < 3; ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    if (!x.has_shape) {
      ctx.set_output_rank_unknown(i, stash);
      continue;
    }
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
    ir::SymShape s(x.shape.begin(), x.shape.begin() + axis);
    for (int64_t j = axis; j < rank; ++j) s.push_back(ir::Dim(1));
    ctx.set_output(i, stash, s);
  }
}

// `t` broadcast (numpy, right-aligned, unidirectional) to `target`, materialised.
std::vector<float> broadcast_param(const Tensor& t, const Shape& target, const ir::Node& node, const char* name) {
  const Shape& s = t.shape();
  bool ok = s.size() <= target.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], td = target[target.size() - 1 - i];
    ok = d == 1 || d == td;
  }
  KILNRT_CHECK(ok, kInvalidArgument, node.describe(),
               name << " of shape " << shape_to_string(s) << " does not broadcast to " << shape_to_string(target));
  const int64_t total = shape_numel(target);
  std::vector<float> out(static_cast<size_t>(total));
  const float* src = t.data<float>();
  if (t.numel() == total) {
    for (int64_t i = 0; i < total; ++i) out[i] = src[i];
    return out;
  }
  // Strides of t aligned to target, 0 where broadcast.
  const size_t r = target.size();
  std::vector<int64_t> strides(r, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i];
    strides[r - 1 - i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t j = 0; j < r; ++j) off += idx[j] * strides[j];
    out[i] = src[off];
    for (size_t j = r; j-- > 0;) {
      if (++idx[j] < target[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

void layer_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const DType stash = stash_dtype(node);
  Tensor x = to_float32(ctx.input(0), node, "X");
  const int64_t rank = x.rank();
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "input X must have rank >= 1");
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t rows = dims_product(x.shape(), 0, axis), len = shape_numel(norm_shape);
  std::vector<float> scale = broadcast_param(to_float32(ctx.input(1), node, "Scale"), norm_shape, node, "Scale");
  std::vector<float> bias;
  if (ctx.has_input(2)) bias = broadcast_param(to_float32(ctx.input(2), node, "B"), norm_shape, node, "B");
  Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
  for (int64_t j = axis; j < rank; ++j) stat_shape.push_back(1);
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  Tensor mean_t = Tensor::empty(DType::kFloat32, stat_shape);
  Tensor inv_t = Tensor::empty(DType::kFloat32, stat_shape);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  float* mp = mean_t.data<float>();
  float* ip = inv_t.data<float>();
  const float* sp = scale.data();
  const float* bp = bias.empty() ? nullptr : bias.data();
#pragma omp parallel for schedule(static) if (rows * len > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xs = xp + r * len;
    float* ys = yp + r * len;
    double mean = 0.0, var = 0.0;
    row_moments(xs, len, &mean, &var);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    mp[r] = m;
    ip[r] = inv;
    if (bp) {
      for (int64_t i = 0; i < len; ++i) ys[i] = (xs[i] - m) * inv * sp[i] + bp[i];
    } else {
      for (int64_t i = 0; i < len; ++i) ys[i] = (xs[i] - m) * inv * sp[i];
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
  if (ctx.wants_output(1)) ctx.outputs[1] = from_float32(mean_t, stash);
  if (ctx.wants_output(2)) ctx.outputs[2] = from_float32(inv_t, stash);
}

// ---- RMSNormalization (opset 23) -------------------------------------------------------------------------------
// Y = X / sqrt(mean(X^2 over dims [axis, rank)) + epsilon) * Scale (Scale broadcast to those dims).
void rms_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  stash_dtype(node);
  Tensor x = to_float32(ctx.input(0), node, "X");
  const int64_t rank = x.rank();
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "input X must have rank >= 1");
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const int64_t rows = dims_product(x.shape(), 0, axis), len = shape_numel(norm_shape);
  std::vector<float> scale = broadcast_param(to_float32(ctx.input(1), node, "scale"), norm_shape, node, "scale");
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (rows * len > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xs = xp + r * len;
    float* ys = yp + r * len;
    double sq = 0.0;
    for (int64_t i = 0; i < len; ++i) sq += static_cast<double>(xs[i]) * xs[i];
    const double inv = 1.0 / std::sqrt((len > 0 ? sq / static_cast<double>(len) : 0.0) + eps);
    for (int64_t i = 0; i < len; ++i) ys[i] = static_cast<float>(xs[i] * inv * scale[i]);
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

// ---- LpNormalization -------------------------------------------------------------------------------------------
// Y = X / (sum over `axis` of |X|^p)^(1/p), p = 1 or 2; a zero norm gives 0 (not NaN).
void lp_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "input");
  const int64_t rank = x.rank();
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "input must have rank >= 1");
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  const int64_t p = node.attr_int("p", 2);
  KILNRT_CHECK(p == 1 || p == 2, kInvalidModel, node.describe(), "p must be 1 or 2, got " << p);
  const int64_t outer = dims_product(x.shape(), 0, axis), dim = x.shape()[axis];
  const int64_t inner = dims_product(x.shape(), axis + 1, rank);
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * dim * inner + i;
      double acc = 0.0;
      for (int64_t k = 0; k < dim; ++k) {
        const double v = xp[base + k * inner];
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      const double norm = p == 1 ? acc : std::sqrt(acc);
      for (int64_t k = 0; k < dim; ++k)
        yp[base + k * inner] = norm == 0.0 ? 0.0f : static_cast<float>(xp[base + k * inner] / norm);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

// ---- GroupNormalization ---------------------------------------------------------------------------------------

void group_norm_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "X");
  check_nc_input(x.shape(), node, 2);
  const int64_t groups = node.attr_int("num_groups");
  const int64_t n = x.dim(0), c = x.dim(1), size = dims_product(x.shape(), 2, x.rank());
  KILNRT_CHECK(groups >= 1 && c % groups == 0, kInvalidArgument, node.describe(),
               "num_groups " << groups << " must divide the " << c << " channels");
  Tensor scale = to_float32(ctx.input(1), node, "scale");
  Tensor bias = to_float32(ctx.input(2), node, "bias");
  // Opset 21: per-channel scale/bias [C]; opset 18: per-group [num_groups].
  const bool per_channel = scale.numel() == c;
  const int64_t expected = per_channel ? c : groups;
  KILNRT_CHECK(scale.numel() == expected && bias.numel() == expected && scale.rank() == 1 && bias.rank() == 1,
               kInvalidArgument, node.describe(),
               "scale " << shape_to_string(scale.shape()) << " and bias " << shape_to_string(bias.shape())
                        << " must be [" << (ctx.opset >= 21 ? c : groups) << "]"
                        << (ctx.opset >= 21 ? " (one per channel)" : " (one per group)"));
  const double eps = node.attr_float("epsilon", 1e-5f);
  const int64_t cpg = c / groups, len = cpg * size;
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* sp = scale.data<float>();
  const float* bp = bias.data<float>();
#pragma omp parallel for schedule(static) if (n * c * size > 32768)
  for (int64_t ng = 0; ng < n * groups; ++ng) {
    const int64_t grp = ng % groups;
    const float* xs = xp + ng * len;
    float* ys = yp + ng * len;
    double mean = 0.0, var = 0.0;
    row_moments(xs, len, &mean, &var);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (int64_t ch = 0; ch < cpg; ++ch) {
      const int64_t pi = per_channel ? grp * cpg + ch : grp;
      const float a = sp[pi] * inv;
      const float b = bp[pi] - static_cast<float>(mean) * a;
      const float* xc = xs + ch * size;
      float* yc = ys + ch * size;
      for (int64_t i = 0; i < size; ++i) yc[i] = xc[i] * a + b;
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

// ---- LRN ------------------------------------------------------------------------------------------------------

void lrn_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "X");
  check_nc_input(x.shape(), node, 2);
  const int64_t size_attr = node.attr_int("size");
  KILNRT_CHECK(size_attr >= 1, kInvalidModel, node.describe(), "size must be >= 1, got " << size_attr);
  const float alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f);
  const float bias = node.attr_float("bias", 1.f);
  const int64_t n = x.dim(0), c = x.dim(1), size = dims_product(x.shape(), 2, x.rank());
  const int64_t before = (size_attr - 1) / 2, after = size_attr - 1 - before;
  Tensor y = Tensor::empty(DType::kFloat32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float scale = alpha / static_cast<float>(size_attr);
#pragma omp parallel for schedule(static) if (n * c * size > 32768)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const int64_t b = nc / c, ch = nc % c;
    const int64_t lo = ch - before < 0 ? 0 : ch - before, hi = ch + after > c - 1 ? c - 1 : ch + after;
    const float* xs = xp + nc * size;
    float* ys = yp + nc * size;
    for (int64_t i = 0; i < size; ++i) {
      float sq = 0.f;
      for (int64_t j = lo; j <= hi; ++j) {
        const float v = xp[(b * c + j) * size + i];
        sq += v * v;
      }
      ys[i] = xs[i] / std::pow(bias + scale * sq, beta);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{
    "", "BatchNormalization", 9, 1000, infer_batch_norm, batch_norm_cpu, float_dtypes(),
    "batch norm: running statistics, or batch statistics + running mean/var outputs (training_mode=1)"});
KILNRT_REGISTER_OP(OpSchema{"", "InstanceNormalization", 1, 1000, infer_same_as_input, instance_norm_cpu,
                            float_dtypes(), "per-(N, C) normalization with per-channel scale and bias"});
KILNRT_REGISTER_OP(OpSchema{"", "LayerNormalization", 17, 1000, infer_layer_norm, layer_norm_cpu, float_dtypes(),
                            "normalization over dims [axis, rank), optional bias, Mean and InvStdDev outputs"});
KILNRT_REGISTER_OP(OpSchema{"", "RMSNormalization", 23, 1000, infer_same_as_input, rms_norm_cpu, float_dtypes(),
                            "X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale"});
KILNRT_REGISTER_OP(OpSchema{"", "LpNormalization", 1, 1000, infer_same_as_input, lp_norm_cpu, float_dtypes(),
                            "X / Lp norm along axis (p = 1 or 2; zero norm gives 0)"});
KILNRT_REGISTER_OP(OpSchema{"", "GroupNormalization", 18, 1000, infer_same_as_input, group_norm_cpu, float_dtypes(),
                            "group norm: per-group (opset 18) or per-channel (opset 21) affine"});
KILNRT_REGISTER_OP(OpSchema{"", "LRN", 1, 1000, infer_same_as_input, lrn_cpu, float_dtypes(),
                            "local response normalization across channels"});

}  // namespace
}  // namespace kilnrt::ops::nn
