// ONNX CausalConvWithState (opset 27): causal depthwise 1-D convolution with a carried state.
//   input [B, C, L], weight [C, 1, K], bias [C]?, past_state [B, C, K-1]? (zeros when absent)
//   padded = concat(past_state, input) along the length; output[b, c, t] = bias[c] + sum_k w[c, 0, k] *
//   padded[b, c, t + k]; activation "silu" / "swish": y * sigmoid(y), "none" (default): y.
//   present_state = the last K-1 positions of padded.
// Math in double, I/O in the model's float dtype.
#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void causal_conv_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "input");
  Tensor w = to_float32(ctx.input(1), node, "weight");
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  KILNRT_CHECK(xs.size() == 3, kInvalidModel, node.describe(), "input must be [B, C, L], got " << shape_to_string(xs));
  const int64_t batch = xs[0], ch = xs[1], len = xs[2];
  KILNRT_CHECK(ws.size() == 3 && ws[0] == ch && ws[1] == 1 && ws[2] >= 1, kInvalidModel, node.describe(),
               "weight must be [C, 1, K] with C = " << ch << ", got " << shape_to_string(ws));
  const int64_t k = ws[2], state = k - 1;
  const std::string act = node.attr_string("activation", "none");
  KILNRT_CHECK(act == "none" || act == "silu" || act == "swish", kInvalidModel, node.describe(),
               "activation must be none, silu or swish, got '" << act << "'");
  Tensor bias, past;
  if (ctx.has_input(2)) {
    bias = to_float32(ctx.input(2), node, "bias");
    KILNRT_CHECK(bias.numel() == ch, kInvalidModel, node.describe(),
                 "bias has shape " << shape_to_string(bias.shape()) << ", expected [" << ch << "]");
  }
  if (ctx.has_input(3)) {
    past = to_float32(ctx.input(3), node, "past_state");
    KILNRT_CHECK(past.shape() == (Shape{batch, ch, state}), kInvalidModel, node.describe(),
                 "past_state has shape " << shape_to_string(past.shape()) << ", expected [" << batch << ", " << ch
                                         << ", " << state << "]");
  }
  const int64_t plen = state + len;
  Tensor y = Tensor::empty(DType::kFloat32, xs);
  Tensor present = Tensor::empty(DType::kFloat32, {batch, ch, state});
  std::vector<double> padded(static_cast<size_t>(plen));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < ch; ++c) {
      for (int64_t t = 0; t < state; ++t)
        padded[t] = past.defined() ? past.data<float>()[(b * ch + c) * state + t] : 0.0;
      for (int64_t t = 0; t < len; ++t) padded[state + t] = x.data<float>()[(b * ch + c) * len + t];
      const float* wc = w.data<float>() + c * k;
      const double bc = bias.defined() ? bias.data<float>()[c] : 0.0;
      float* yr = y.data<float>() + (b * ch + c) * len;
      for (int64_t t = 0; t < len; ++t) {
        double acc = bc;
        for (int64_t j = 0; j < k; ++j) acc += wc[j] * padded[t + j];
        if (act != "none") acc = acc / (1.0 + std::exp(-acc));
        yr[t] = static_cast<float>(acc);
      }
      float* pr = present.data<float>() + (b * ch + c) * state;
      for (int64_t t = 0; t < state; ++t) pr[t] = static_cast<float>(padded[plen - state + t]);
    }
  ctx.outputs[0] = from_float32(y, dtype);
  if (ctx.wants_output(1)) ctx.outputs[1] = from_float32(present, dtype);
}

void infer_causal_conv(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) ctx.set_output_rank_unknown(1, x.dtype);
    return;
  }
  ctx.set_output(0, x.dtype, x.shape);
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) {
    ir::Dim state;
    if (w.has_shape && w.shape.size() == 3 && w.shape[2].known()) state = ir::Dim(w.shape[2].value - 1);
    ctx.set_output(1, x.dtype,
                   {x.shape.size() == 3 ? x.shape[0] : ir::Dim(), x.shape.size() == 3 ? x.shape[1] : ir::Dim(), state});
  }
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "CausalConvWithState", 27, 1000, infer_causal_conv, causal_conv_cpu, float_dtypes(),
                            "causal depthwise 1-D conv with carried state (past_state -> present_state), SiLU"});

}  // namespace kilnrt::ops::nn
