// com.kilnrt:SqueezeExcite, the CPU reference (see squeeze_excite.h): channel means in double, the two small
// mat-vecs and activations in float32, then one scaling pass. 16-bit tensors are computed in float32.
#include "ops/nn/squeeze_excite/squeeze_excite.h"

#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

// The epilogue named by attributes `name_key` / `params_key` (FusedConv's activation names and parameter counts).
FusedEpilogue read_activation(const ir::Node& node, const char* name_key, const char* params_key) {
  ir::Node probe;
  probe.name = node.name;
  probe.op_type = node.op_type;
  probe.domain = node.domain;
  if (node.has_attr(name_key)) probe.attrs["activation"] = node.attrs.at(name_key);
  if (node.has_attr(params_key)) probe.attrs["activation_params"] = node.attrs.at(params_key);
  return read_fused_epilogue(probe);
}

// Checks a weight of `rows` x `cols` values with dim 0 == rows ([rows, cols] or [rows, cols, 1, 1]).
void check_weight(const ir::Node& node, const char* what, const Shape& s, int64_t rows, int64_t cols) {
  KILNRT_CHECK(!s.empty() && s[0] == rows && shape_numel(s) == rows * cols, kInvalidModel, node.describe(),
               "SqueezeExcite " << what << " of shape " << shape_to_string(s) << " must hold " << rows << " x " << cols
                                << " values (dim 0 = " << rows << ")");
}

void infer_squeeze_excite(ShapeContext& ctx) {
  read_squeeze_excite(ctx.node);  // validates the attributes
  KILNRT_CHECK(ctx.num_inputs() == 5 && ctx.has_input(0) && ctx.has_input(1) && ctx.has_input(3), kInvalidModel,
               ctx.node.describe(), "SqueezeExcite takes X, W1, B1 (or \"\"), W2, B2 (or \"\")");
  const ir::TensorType& x = ctx.input(0);
  KILNRT_CHECK(!x.has_shape || x.shape.size() == 4, kInvalidModel, ctx.node.describe(),
               "SqueezeExcite X must be 4-D [N,C,H,W], got " << ir::sym_shape_to_string(x.shape));
  for (size_t i = 1; i < 5; ++i)
    KILNRT_CHECK(!ctx.has_input(i) || ctx.input(i).dtype == x.dtype, kInvalidModel, ctx.node.describe(),
                 "SqueezeExcite input " << i << " has dtype " << dtype_name(ctx.input(i).dtype) << ", X has "
                                        << dtype_name(x.dtype));
  ctx.outputs[0] = x;
}

void squeeze_excite_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const SqueezeExciteParams p = read_squeeze_excite(node);
  const Tensor& x_in = ctx.input(0);
  KILNRT_CHECK(x_in.rank() == 4, kInvalidArgument, node.describe(),
               "SqueezeExcite X must be 4-D [N,C,H,W], got " << shape_to_string(x_in.shape()));
  const int64_t n = x_in.dim(0), c = x_in.dim(1), hw = x_in.dim(2) * x_in.dim(3);
  const Tensor& w1_in = ctx.input(1);
  const Tensor& w2_in = ctx.input(3);
  KILNRT_CHECK(w1_in.rank() >= 1, kInvalidModel, node.describe(), "SqueezeExcite W1 must have a dim 0");
  const int64_t cs = w1_in.dim(0);
  check_weight(node, "W1", w1_in.shape(), cs, c);
  check_weight(node, "W2", w2_in.shape(), c, cs);
  if (ctx.has_input(2)) check_weight(node, "B1", ctx.input(2).shape(), cs, 1);
  if (ctx.has_input(4)) check_weight(node, "B2", ctx.input(4).shape(), c, 1);
  const Tensor x = to_float32(x_in, node, "X"), w1 = to_float32(w1_in, node, "W1"), w2 = to_float32(w2_in, node, "W2");
  const Tensor b1 = ctx.has_input(2) ? to_float32(ctx.input(2), node, "B1") : Tensor();
  const Tensor b2 = ctx.has_input(4) ? to_float32(ctx.input(4), node, "B2") : Tensor();
  const float* xp = x.data<float>();
  Tensor y = Tensor::empty(DType::kFloat32, x_in.shape());
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (n * c * hw > 65536)
  for (int64_t i = 0; i < n; ++i) {
    std::vector<float> mean(static_cast<size_t>(c)), h(static_cast<size_t>(cs)), s(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) {
      const float* row = xp + (i * c + k) * hw;
      double sum = 0.0;
      for (int64_t t = 0; t < hw; ++t) sum += row[t];
      mean[k] = hw > 0 ? static_cast<float>(sum / static_cast<double>(hw)) : 0.f;
    }
    for (int64_t j = 0; j < cs; ++j) {
      const float* wr = w1.data<float>() + j * c;
      float acc = b1.defined() ? b1.data<float>()[j] : 0.f;
      for (int64_t k = 0; k < c; ++k) acc += wr[k] * mean[k];
      h[j] = apply_fused_activation(p.act, acc);
    }
    for (int64_t k = 0; k < c; ++k) {
      const float* wr = w2.data<float>() + k * cs;
      float acc = b2.defined() ? b2.data<float>()[k] : 0.f;
      for (int64_t j = 0; j < cs; ++j) acc += wr[j] * h[j];
      s[k] = apply_fused_activation(p.gate, acc);
    }
    for (int64_t k = 0; k < c; ++k) {
      const float* row = xp + (i * c + k) * hw;
      float* out = yp + (i * c + k) * hw;
      for (int64_t t = 0; t < hw; ++t) out[t] = row[t] * s[k];
    }
  }
  ctx.outputs[0] = x_in.dtype() == DType::kFloat32 ? y : from_float32(y, x_in.dtype());
}

KILNRT_REGISTER_OP(OpSchema{kFusedConvDomain, kSqueezeExciteOp, 1, 1000, infer_squeeze_excite, squeeze_excite_cpu,
                            float_dtypes(),
                            "X * gate(W2 act(W1 mean_hw(X) + B1) + B2), a squeeze-and-excitation block (made by "
                            "fuse_squeeze_excite)"});

}  // namespace

SqueezeExciteParams read_squeeze_excite(const ir::Node& node) {
  SqueezeExciteParams p;
  p.act = read_activation(node, "activation", "activation_params");
  p.gate = read_activation(node, "gate", "gate_params");
  return p;
}

}  // namespace kilnrt::ops::nn
