// CUDA layers of the ai.onnx.preview.training optimizers (every registry op has a CUDA path): Adagrad, Momentum
// (standard / nesterov) and Adam, one elementwise kernel per optimized tensor (optimizer.cu) with the CPU
// reference's formulas (src/ops/math/training/training.cc, double math). The scalars R (learning rate) and T (step
// count) are read by the kernels on the device: no host read, no sync, graph-capturable.
#include "ops/cuda/cuda_layer.h"
#include "ops/math/training/cuda/optimizer_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gp = kilnrt::cuda::kernels::optimizer;

// Input groups after R and T: Adagrad / Momentum (X, G, H or V), Adam (X, G, V, H).
int64_t groups_of(const std::string& op) { return op == "Adam" ? 4 : 3; }

class OptimizerLayer final : public CudaLayer {
 public:
  explicit OptimizerLayer(const ir::Node& n)
      : name_(n.describe()), op_(n.op_type), groups_(groups_of(n.op_type)), outputs_(n.outputs.size()) {
    if (op_ == "Adagrad") {
      a_.decay = n.attr_float("decay_factor", 0.f);
      a_.eps = n.attr_float("epsilon", 1e-6f);
      a_.norm = n.attr_float("norm_coefficient", 0.f);
    } else if (op_ == "Momentum") {
      a_.alpha = n.attr_float("alpha");
      a_.beta = n.attr_float("beta");
      a_.norm = n.attr_float("norm_coefficient");
      const std::string mode = n.attr_string("mode");
      KILNRT_CHECK(mode == "standard" || mode == "nesterov", kInvalidModel, name_,
                   "mode must be standard or nesterov, got '" << mode << "'");
      a_.nesterov = mode == "nesterov";
    } else {
      a_.alpha = n.attr_float("alpha", 0.9f);
      a_.beta = n.attr_float("beta", 0.999f);
      a_.eps = n.attr_float("epsilon", 1e-6f);
      a_.norm = n.attr_float("norm_coefficient", 0.f);
      a_.norm_post = n.attr_float("norm_coefficient_post", 0.f);
    }
  }
  std::string tactic() const override { return "kernel:" + op_ + "-step"; }
  void enqueue(LayerLaunch& l) override {
    const int64_t rest = static_cast<int64_t>(l.inputs.size()) - 2;
    KILNRT_CHECK(rest > 0 && rest % groups_ == 0, kInvalidModel, name_,
                 "expected R, T and " << groups_ << " groups of equally many inputs, got " << l.inputs.size());
    const int64_t n = rest / groups_;
    const int64_t states = groups_ - 2;  // state tensors per optimized tensor, each with an output
    KILNRT_CHECK(static_cast<int64_t>(outputs_) >= (1 + states) * n, kInvalidModel, name_,
                 "expected " << (1 + states) * n << " outputs, got " << outputs_);
    const LayerTensor& r = l.inputs[0];
    const LayerTensor& t = l.inputs[1];
    KILNRT_CHECK(r.present && t.present && r.numel() == 1 && t.numel() == 1, kInvalidArgument, name_,
                 "R and T must be single values");
    KILNRT_CHECK(
        dtype_is_one_of(r.dtype, {DType::kFloat32, DType::kFloat64}) && t.dtype == DType::kInt64, kUnsupported, name_,
        "R must be float32 / float64 and T int64, got " << dtype_name(r.dtype) << " / " << dtype_name(t.dtype));
    gp::OptScalars s;
    s.r = r.data;
    s.r_f64 = r.dtype == DType::kFloat64;
    s.t = static_cast<const int64_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) {
      const LayerTensor& x = l.inputs[static_cast<size_t>(2 + i)];
      gp::OptTensor ot;
      ot.n = x.numel();
      ot.f64 = x.dtype == DType::kFloat64;
      KILNRT_CHECK(dtype_is_one_of(x.dtype, {DType::kFloat32, DType::kFloat64}), kUnsupported, name_,
                   "optimized tensors must be float32 / float64, got " << dtype_name(x.dtype));
      const void* in[4] = {x.data, nullptr, nullptr, nullptr};
      for (int64_t grp = 1; grp < groups_; ++grp) {
        const LayerTensor& v = l.inputs[static_cast<size_t>(2 + grp * n + i)];
        KILNRT_CHECK(v.present && v.numel() == ot.n && v.dtype == x.dtype, kInvalidModel, name_,
                     "a gradient or state has " << v.numel() << " " << dtype_name(v.dtype)
                                                << " values, its optimized tensor " << ot.n << " "
                                                << dtype_name(x.dtype));
        in[grp] = v.data;
      }
      ot.x = in[0];
      ot.g = in[1];
      ot.s1 = in[2];
      ot.s2 = in[3];
      auto out = [&](int64_t k) -> void* {
        const size_t o = static_cast<size_t>(k * n + i);
        return o < l.outputs.size() && l.outputs[o].present ? l.outputs[o].data : nullptr;
      };
      ot.x_out = out(0);
      ot.s1_out = out(1);
      ot.s2_out = states > 1 ? out(2) : nullptr;
      const int st = op_ == "Adagrad"    ? gp::adagrad(s, ot, a_, l.stream)
                     : op_ == "Momentum" ? gp::momentum(s, ot, a_, l.stream)
                                         : gp::adam(s, ot, a_, l.stream);
      check_launch(st, name_, op_.c_str());
    }
  }

 private:
  std::string name_, op_;
  int64_t groups_;
  size_t outputs_;
  gp::OptAttrs a_;
};

std::string supports_optimizer(const ir::Node& n, const ir::Graph& g) {
  const int64_t groups = groups_of(n.op_type);
  const int64_t rest = static_cast<int64_t>(n.inputs.size()) - 2;
  if (rest <= 0 || rest % groups != 0) return "expected R, T and groups of equally many inputs";
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i].empty()) return "input " + std::to_string(i) + " is omitted";
  const DType r = value_dtype(g, n.inputs[0]), t = value_dtype(g, n.inputs[1]);
  if (r != DType::kUndefined && !dtype_is_one_of(r, {DType::kFloat32, DType::kFloat64}))
    return "R must be float32 / float64";
  if (t != DType::kUndefined && t != DType::kInt64) return "T must be int64";
  for (size_t i = 2; i < n.inputs.size(); ++i) {
    const DType d = value_dtype(g, n.inputs[i]);
    if (d != DType::kUndefined && !dtype_is_one_of(d, {DType::kFloat32, DType::kFloat64}))
      return "the CUDA optimizers take float32 / float64 tensors";
  }
  return "";
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"ai.onnx.preview.training:Adagrad", "ai.onnx.preview.training:Momentum",
                            "ai.onnx.preview.training:Adam"},
                           supports_optimizer, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<OptimizerLayer>(a.node);
                           });

}  // namespace kilnrt::backends::cuda
