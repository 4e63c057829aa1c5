// RNN, GRU and LSTM (opsets 7 / 14): forward, reverse and bidirectional, sequence_lens (steps past a batch entry's
// length output zeros and keep its state), initial_h / initial_c, LSTM peepholes and input_forget, GRU
// linear_before_reset, clip, activations with alpha/beta, layout 0 and 1. Reference kernels computed in double.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

using Act = std::function<double(double)>;

Act make_activation(const std::string& name, double alpha, double beta, const ir::Node& node) {
  if (name == "Tanh") return [](double x) { return std::tanh(x); };
  if (name == "Sigmoid") return [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (name == "Relu") return [](double x) { return x > 0 ? x : 0.0; };
  if (name == "Affine") return [alpha, beta](double x) { return alpha * x + beta; };
  if (name == "LeakyRelu") return [alpha](double x) { return x >= 0 ? x : alpha * x; };
  if (name == "ThresholdedRelu") return [alpha](double x) { return x > alpha ? x : 0.0; };
  if (name == "ScaledTanh") return [alpha, beta](double x) { return alpha * std::tanh(beta * x); };
  if (name == "HardSigmoid") return [alpha, beta](double x) { return std::max(0.0, std::min(1.0, alpha * x + beta)); };
  if (name == "Elu") return [alpha](double x) { return x >= 0 ? x : alpha * (std::exp(x) - 1); };
  if (name == "Softsign") return [](double x) { return x / (1 + std::fabs(x)); };
  if (name == "Softplus") return [](double x) { return std::log1p(std::exp(x)); };
  KILNRT_THROW(kUnsupported, node.describe(), "unknown activation '" << name << "'");
}

bool activation_uses_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool activation_uses_beta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }
double default_alpha(const std::string& n) {
  if (n == "LeakyRelu") return 0.01;
  if (n == "HardSigmoid") return 0.2;
  return 1.0;
}
double default_beta(const std::string& n) { return n == "HardSigmoid" ? 0.5 : 0.0; }

enum class Kind { kRnn, kGru, kLstm };

struct RnnSpec {
  Kind kind;
  int gates;   // 1, 3, 4
  int n_acts;  // activations per direction: 1, 2, 3
  const char* default_acts[3];
};
RnnSpec spec_of(const std::string& op) {
  if (op == "RNN") return {Kind::kRnn, 1, 1, {"Tanh", "", ""}};
  if (op == "GRU") return {Kind::kGru, 3, 2, {"Sigmoid", "Tanh", ""}};
  return {Kind::kLstm, 4, 3, {"Sigmoid", "Tanh", "Tanh"}};
}

int num_directions(const ir::Node& node) {
  const std::string d = node.attr_string("direction", "forward");
  KILNRT_CHECK(d == "forward" || d == "reverse" || d == "bidirectional", kInvalidModel, node.describe(),
               "direction must be forward, reverse or bidirectional, got '" << d << "'");
  return d == "bidirectional" ? 2 : 1;
}

std::vector<Act> read_activations(const ir::Node& node, const RnnSpec& spec, int dirs) {
  std::vector<std::string> names =
      node.attrs.count("activations") ? node.attrs.at("activations").strings : std::vector<std::string>{};
  if (names.empty())
    for (int d = 0; d < dirs; ++d)
      for (int i = 0; i < spec.n_acts; ++i) names.push_back(spec.default_acts[i]);
  KILNRT_CHECK(static_cast<int>(names.size()) == spec.n_acts * dirs, kInvalidModel, node.describe(),
               "expected " << spec.n_acts * dirs << " activations, got " << names.size());
  const std::vector<float> alphas = node.attr_floats("activation_alpha", std::vector<float>{});
  const std::vector<float> betas = node.attr_floats("activation_beta", std::vector<float>{});
  size_t ai = 0, bi = 0;
  std::vector<Act> acts;
  for (const std::string& n : names) {
    double a = default_alpha(n), b = default_beta(n);
    if (activation_uses_alpha(n) && ai < alphas.size()) a = alphas[ai++];
    if (activation_uses_beta(n) && bi < betas.size()) b = betas[bi++];
    acts.push_back(make_activation(n, a, b, node));
  }
  return acts;
}

void infer_rnn(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const int dirs = num_directions(ctx.node);
  const int64_t hidden = ctx.node.attr_int("hidden_size", -1);
  const bool batch_first = ctx.node.attr_int("layout", 0) != 0;
  ir::Dim seq, batch;
  if (x.has_shape && x.shape.size() == 3) {
    seq = x.shape[batch_first ? 1 : 0];
    batch = x.shape[batch_first ? 0 : 1];
  }
  ir::Dim h = hidden > 0 ? ir::Dim(hidden) : ir::Dim();
  ir::Dim nd(dirs);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    if (i == 0)
      ctx.set_output(0, x.dtype, batch_first ? ir::SymShape{batch, seq, nd, h} : ir::SymShape{seq, nd, batch, h});
    else
      ctx.set_output(i, x.dtype, batch_first ? ir::SymShape{batch, nd, h} : ir::SymShape{nd, batch, h});
  }
}

void rnn_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const RnnSpec spec = spec_of(node.op_type);
  const int dirs = num_directions(node);
  const bool reverse_only = node.attr_string("direction", "forward") == "reverse";
  const bool batch_first = node.attr_int("layout", 0) != 0;
  const Tensor& xt = ctx.input(0);
  KILNRT_CHECK(xt.rank() == 3, kInvalidArgument, node.describe(), "X must be 3-D");
  const int64_t seq = xt.shape()[batch_first ? 1 : 0], batch = xt.shape()[batch_first ? 0 : 1];
  const int64_t in = xt.shape()[2];
  const std::vector<double> X = tensor_to_doubles(xt, node);
  const std::vector<double> W = tensor_to_doubles(ctx.input(1), node);
  const std::vector<double> R = tensor_to_doubles(ctx.input(2), node);
  const int64_t G = spec.gates;
  KILNRT_CHECK(ctx.input(2).rank() == 3, kInvalidArgument, node.describe(),
               "R must be 3-D, got shape " << shape_to_string(ctx.input(2).shape()));
  const int64_t H = ctx.input(2).shape()[2];
  KILNRT_CHECK(ctx.input(2).numel() == dirs * G * H * H, kInvalidArgument, node.describe(),
               "R has shape " << shape_to_string(ctx.input(2).shape()) << ", expected [" << dirs << ", " << G * H
                              << ", " << H << "]");
  KILNRT_CHECK(ctx.input(1).numel() == dirs * G * H * in, kInvalidArgument, node.describe(),
               "W has shape " << shape_to_string(ctx.input(1).shape()) << ", expected [" << dirs << ", " << G * H
                              << ", " << in << "]");
  std::vector<double> B(static_cast<size_t>(dirs * 2 * G * H), 0.0);
  if (ctx.has_input(3)) B = tensor_to_doubles(ctx.input(3), node);
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (ctx.has_input(4)) lens = tensor_to_int64s(ctx.input(4));
  // Every optional input must hold exactly what the loops below read (a hostile model may give any shape).
  KILNRT_CHECK(B.size() == static_cast<size_t>(dirs * 2 * G * H), kInvalidArgument, node.describe(),
               "B has " << B.size() << " values, expected " << dirs * 2 * G * H);
  KILNRT_CHECK(lens.size() == static_cast<size_t>(batch), kInvalidArgument, node.describe(),
               "sequence_lens has " << lens.size() << " values, expected " << batch);
  for (int64_t l : lens)  // values above seq are clamped below
    KILNRT_CHECK(l >= 0, kInvalidArgument, node.describe(), "sequence_lens value " << l << " is negative");
  std::vector<double> H0(static_cast<size_t>(dirs * batch * H), 0.0), C0 = H0;
  // initial states are [dirs, batch, H] (layout 0) or [batch, dirs, H] (layout 1): index via a helper.
  auto state_index = [&](int64_t d, int64_t b, int64_t h) {
    return static_cast<size_t>(batch_first ? (b * dirs + d) * H + h : (d * batch + b) * H + h);
  };
  if (ctx.has_input(5)) H0 = tensor_to_doubles(ctx.input(5), node);
  std::vector<double> P(static_cast<size_t>(dirs * 3 * H), 0.0);
  if (spec.kind == Kind::kLstm) {
    if (ctx.has_input(6)) C0 = tensor_to_doubles(ctx.input(6), node);
    if (ctx.has_input(7)) P = tensor_to_doubles(ctx.input(7), node);
  }
  KILNRT_CHECK(H0.size() == static_cast<size_t>(dirs * batch * H) && C0.size() == H0.size(), kInvalidArgument,
               node.describe(), "initial_h / initial_c must hold " << dirs * batch * H << " values");
  KILNRT_CHECK(P.size() == static_cast<size_t>(dirs * 3 * H), kInvalidArgument, node.describe(),
               "P has " << P.size() << " values, expected " << dirs * 3 * H);
  const std::vector<Act> acts = read_activations(node, spec, dirs);
  const double clip = node.attrs.count("clip") ? node.attr_float("clip") : 0.0;
  const bool has_clip = node.attrs.count("clip") > 0;
  const bool lbr = node.attr_int("linear_before_reset", 0) != 0;
  const bool input_forget = node.attr_int("input_forget", 0) != 0;
  auto cl = [&](double v) { return has_clip ? std::max(-clip, std::min(clip, v)) : v; };

  std::vector<double> Y(static_cast<size_t>(seq * dirs * batch * H), 0.0);
  std::vector<double> Yh(static_cast<size_t>(dirs * batch * H), 0.0), Yc = Yh;
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t h) {
    return static_cast<size_t>(batch_first ? ((b * seq + t) * dirs + d) * H + h : ((t * dirs + d) * batch + b) * H + h);
  };
  for (int64_t d = 0; d < dirs; ++d) {
    const bool rev = reverse_only || d == 1;
    const double* w = W.data() + d * G * H * in;
    const double* r = R.data() + d * G * H * H;
    const double* wb = B.data() + d * 2 * G * H;
    const double* rb = wb + G * H;
    const double* p = P.data() + d * 3 * H;
    const Act* a = acts.data() + d * spec.n_acts;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = H0[state_index(d, b, j)];
        c[static_cast<size_t>(j)] = C0[state_index(d, b, j)];
      }
      const int64_t len = std::min(lens[static_cast<size_t>(b)], seq);
      std::vector<double> gx(static_cast<size_t>(G * H)), gh(static_cast<size_t>(G * H));
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        const double* x = X.data() + (batch_first ? (b * seq + t) * in : (t * batch + b) * in);
        for (int64_t g = 0; g < G * H; ++g) {
          double sx = wb[g], sh = rb[g];
          for (int64_t k = 0; k < in; ++k) sx += w[g * in + k] * x[k];
          for (int64_t k = 0; k < H; ++k) sh += r[g * H + k] * h[static_cast<size_t>(k)];
          gx[static_cast<size_t>(g)] = sx;
          gh[static_cast<size_t>(g)] = sh;
        }
        std::vector<double> hn(static_cast<size_t>(H));
        if (spec.kind == Kind::kRnn) {
          for (int64_t j = 0; j < H; ++j) hn[static_cast<size_t>(j)] = a[0](cl(gx[j] + gh[j]));
        } else if (spec.kind == Kind::kGru) {
          // Reset gate of every unit first: linear_before_reset=0 multiplies Rh by (r (.) H_{t-1}), whose k-th entry
          // is r[k] * h[k] (ONNX: ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)).
          std::vector<double> rg(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) rg[static_cast<size_t>(j)] = a[0](cl(gx[H + j] + gh[H + j]));
          for (int64_t j = 0; j < H; ++j) {
            const double z = a[0](cl(gx[j] + gh[j]));
            const double rr = rg[static_cast<size_t>(j)];
            double pre;
            if (lbr) {
              pre = gx[2 * H + j] + rr * gh[2 * H + j];
            } else {
              double s = rb[2 * H + j];
              for (int64_t k = 0; k < H; ++k)
                s += r[(2 * H + j) * H + k] * rg[static_cast<size_t>(k)] * h[static_cast<size_t>(k)];
              pre = gx[2 * H + j] + s;
            }
            const double hh = a[1](cl(pre));
            hn[static_cast<size_t>(j)] = (1 - z) * hh + z * h[static_cast<size_t>(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double cp = c[static_cast<size_t>(j)];
            const double i_ = a[0](cl(gx[j] + gh[j] + p[j] * cp));
            double f_ = a[0](cl(gx[2 * H + j] + gh[2 * H + j] + p[2 * H + j] * cp));
            if (input_forget) f_ = 1 - i_;
            const double cc = a[1](cl(gx[3 * H + j] + gh[3 * H + j]));
            const double cn = f_ * cp + i_ * cc;
            const double o_ = a[0](cl(gx[H + j] + gh[H + j] + p[H + j] * cn));
            c[static_cast<size_t>(j)] = cn;
            hn[static_cast<size_t>(j)] = o_ * a[2](cn);
          }
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j) Y[y_index(t, d, b, j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh[state_index(d, b, j)] = h[static_cast<size_t>(j)];
        Yc[state_index(d, b, j)] = c[static_cast<size_t>(j)];
      }
    }
  }
  const DType dt = xt.dtype();
  if (ctx.wants_output(0))
    ctx.outputs[0] = tensor_from_doubles(Y, dt, batch_first ? Shape{batch, seq, dirs, H} : Shape{seq, dirs, batch, H});
  const Shape state_shape = batch_first ? Shape{batch, dirs, H} : Shape{dirs, batch, H};
  if (ctx.wants_output(1)) ctx.outputs[1] = tensor_from_doubles(Yh, dt, state_shape);
  if (spec.kind == Kind::kLstm && ctx.wants_output(2)) ctx.outputs[2] = tensor_from_doubles(Yc, dt, state_shape);
}

const std::vector<DType> kRnnDtypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
KILNRT_REGISTER_OP(OpSchema{"", "RNN", 7, 1000, infer_rnn, rnn_cpu, kRnnDtypes,
                            "Elman RNN: forward/reverse/bidirectional, sequence_lens, layout, clip, activations"});
KILNRT_REGISTER_OP(OpSchema{"", "GRU", 7, 1000, infer_rnn, rnn_cpu, kRnnDtypes,
                            "GRU (gates z, r, h; linear_before_reset), directions, sequence_lens, layout"});
KILNRT_REGISTER_OP(OpSchema{"", "LSTM", 7, 1000, infer_rnn, rnn_cpu, kRnnDtypes,
                            "LSTM (gates i, o, f, c; peepholes, input_forget), directions, sequence_lens, layout"});

}  // namespace
}  // namespace kilnrt::ops::nn
