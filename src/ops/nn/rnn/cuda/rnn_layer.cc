// CUDA layer of RNN, GRU and LSTM (float32; forward / reverse / bidirectional,
// sequence_lens, initial states, LSTM peepholes and input_forget, GRU linear_before_reset, clip, activations with
// alpha / beta, layout 0 and 1), one kernel launch per node (rnn.cu), state in the workspace.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/rnn/cuda/rnn_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace x = kilnrt::cuda::kernels;

int act_code(const std::string& n) {
  static const char* const kNames[] = {"Tanh",       "Sigmoid",     "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
                                       "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
  for (int i = 0; i < 11; ++i)
    if (n == kNames[i]) return i;
  return -1;
}
bool uses_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool uses_beta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }

int rnn_kind(const std::string& op) { return op == "RNN" ? 0 : op == "GRU" ? 1 : 2; }

// The plan's static part from the node's attributes; "" or why the node is unsupported.
std::string read_plan(const ir::Node& n, x::RnnPlan* p) {
  p->kind = rnn_kind(n.op_type);
  p->gates = p->kind == 0 ? 1 : p->kind == 1 ? 3 : 4;
  const std::string dir = n.attr_string("direction", std::string("forward"));
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return "direction " + dir;
  p->dirs = dir == "bidirectional" ? 2 : 1;
  p->reverse_only = dir == "reverse";
  p->batch_first = n.attr_int("layout", 0) != 0;
  p->has_clip = n.has_attr("clip");
  p->clip = p->has_clip ? n.attr_float("clip") : 0.0;
  p->lbr = n.attr_int("linear_before_reset", 0) != 0;
  p->input_forget = n.attr_int("input_forget", 0) != 0;
  const int n_acts = p->kind + 1;
  static const char* const kDefaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  std::vector<std::string> names =
      n.attrs.count("activations") ? n.attrs.at("activations").strings : std::vector<std::string>{};
  if (names.empty())
    for (int d = 0; d < p->dirs; ++d)
      for (int i = 0; i < n_acts; ++i) names.push_back(kDefaults[p->kind][i]);
  if (static_cast<int>(names.size()) != n_acts * p->dirs) return "activations count";
  const std::vector<float> alphas = n.attr_floats("activation_alpha", std::vector<float>{});
  const std::vector<float> betas = n.attr_floats("activation_beta", std::vector<float>{});
  size_t ai = 0, bi = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& nm = names[i];
    p->act[i] = act_code(nm);
    if (p->act[i] < 0) return "activation " + nm;
    p->alpha[i] = nm == "LeakyRelu" ? 0.01 : nm == "HardSigmoid" ? 0.2 : 1.0;
    p->beta[i] = nm == "HardSigmoid" ? 0.5 : 0.0;
    if (uses_alpha(nm) && ai < alphas.size()) p->alpha[i] = alphas[ai++];
    if (uses_beta(nm) && bi < betas.size()) p->beta[i] = betas[bi++];
  }
  return "";
}

class RnnLayer final : public CudaLayer {
 public:
  explicit RnnLayer(const ir::Node& n) : name_(n.describe()) {
    const std::string why = read_plan(n, &plan_);
    KILNRT_CHECK(why.empty(), kUnsupported, name_, why);
  }
  std::string tactic() const override { return "kernel:rnn-sequence"; }
  void enqueue(LayerLaunch& l) override {
    x::RnnPlan p = plan_;
    const Shape& xs = l.inputs[0].shape;
    const Shape& rs = l.inputs[2].shape;
    KILNRT_CHECK(xs.size() == 3 && rs.size() == 3, kInvalidArgument, name_, "X and R must be 3-D");
    p.seq = xs[p.batch_first ? 1 : 0];
    p.batch = xs[p.batch_first ? 0 : 1];
    p.in = xs[2];
    p.hidden = rs[2];
    KILNRT_CHECK(l.inputs[1].numel() == p.dirs * p.gates * p.hidden * p.in &&
                     l.inputs[2].numel() == p.dirs * p.gates * p.hidden * p.hidden,
                 kInvalidArgument, name_, "W / R shapes do not match X, the direction and hidden_size");
    auto in = [&](size_t i) -> const LayerTensor* {
      return i < l.inputs.size() && l.inputs[i].present ? &l.inputs[i] : nullptr;
    };
    auto out = [&](size_t i) -> float* {
      return i < l.outputs.size() && l.outputs[i].present ? static_cast<float*>(l.outputs[i].data) : nullptr;
    };
    x::RnnTensors t;
    t.x = static_cast<const float*>(l.inputs[0].data);
    t.w = static_cast<const float*>(l.inputs[1].data);
    t.r = static_cast<const float*>(l.inputs[2].data);
    if (const LayerTensor* b = in(3)) t.b = static_cast<const float*>(b->data);
    if (const LayerTensor* s = in(4)) {
      KILNRT_CHECK(s->numel() == p.batch, kInvalidArgument, name_, "sequence_lens needs one value per batch entry");
      t.lens = s->data;
      p.lens_64 = s->dtype == DType::kInt64;
    }
    if (const LayerTensor* h0 = in(5)) t.h0 = static_cast<const float*>(h0->data);
    if (p.kind == 2) {
      if (const LayerTensor* c0 = in(6)) t.c0 = static_cast<const float*>(c0->data);
      if (const LayerTensor* pp = in(7)) t.p = static_cast<const float*>(pp->data);
    }
    t.y = out(0);
    t.yh = out(1);
    if (p.kind == 2) t.yc = out(2);
    const size_t bytes =
        static_cast<size_t>(p.dirs * p.batch * x::rnn_scratch_per_block(p.gates, p.hidden)) * sizeof(double);
    KILNRT_CHECK(bytes <= l.workspace_bytes, kUnsupported, name_, "RNN state exceeds the CUDA workspace");
    t.scratch = static_cast<double*>(l.workspace);
    check_launch(x::rnn_f32(t, p, l.stream), name_, "rnn");
  }

 private:
  std::string name_;
  x::RnnPlan plan_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"RNN", "GRU", "LSTM"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i].empty()) continue;
        const DType t = value_dtype(g, n.inputs[i]);
        if (i == 4) {
          if (t != DType::kInt32 && t != DType::kInt64) return "sequence_lens must be int32 / int64";
        } else if (t != DType::kFloat32) {
          return "the CUDA layer takes float32";
        }
      }
      x::RnnPlan p;
      return read_plan(n, &p);
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<RnnLayer>(a.node); });

}  // namespace
}  // namespace kilnrt::backends::cuda
