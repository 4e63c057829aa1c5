// com.kilnrt:SqueezeExcite on CUDA (../squeeze_excite.h, squeeze_excite_kernels.h): the channel means,
// both 1x1 convolutions with their activations and the scaling of X in 3 kernel launches. X and Y may be stored
// NHWC (the layer is an NHWC producer, so EfficientNet / MobileNetV3 blocks stay NHWC between their convs).
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/squeeze_excite/cuda/squeeze_excite_kernels.h"
#include "core/check.h"
#include "ops/nn/squeeze_excite/squeeze_excite.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class SqueezeExciteLayer final : public CudaLayer {
 public:
  explicit SqueezeExciteLayer(const ir::Node& n) : name_(n.describe()), p_(ops::nn::read_squeeze_excite(n)) {}
  std::string tactic() const override { return "kernel:squeeze-excite"; }
  bool supports_16bit() const override { return true; }
  bool supports_nhwc() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(x.shape.size() == 4, kInvalidArgument, name_,
                 "SqueezeExcite X must be 4-D [N,C,H,W], got " << shape_to_string(x.shape));
    const int64_t n = x.shape[0], c = x.shape[1], hw = x.shape[2] * x.shape[3];
    const LayerTensor& w1 = l.inputs.at(1);
    const int64_t cs = w1.shape.empty() ? 0 : w1.shape[0];
    auto check_param = [&](size_t i, const char* what, int64_t numel) -> const void* {
      if (i >= l.inputs.size() || !l.inputs[i].present) return nullptr;
      const LayerTensor& t = l.inputs[i];
      KILNRT_CHECK(t.numel() == numel && !t.shape.empty() && t.shape[0] == (i <= 2 ? cs : c), kInvalidArgument, name_,
                   "SqueezeExcite " << what << " of shape " << shape_to_string(t.shape) << " does not fit X of shape "
                                    << shape_to_string(x.shape) << " and " << cs << " squeezed channels");
      KILNRT_CHECK(
          t.dtype == x.dtype, kInvalidArgument, name_,
          "SqueezeExcite " << what << " has dtype " << dtype_name(t.dtype) << ", X has " << dtype_name(x.dtype));
      return t.data;
    };
    k::SqueezeExciteArgs a;
    a.w1 = check_param(1, "W1", cs * c);
    a.b1 = check_param(2, "B1", cs);
    a.w2 = check_param(3, "W2", c * cs);
    a.b2 = check_param(4, "B2", c);
    KILNRT_CHECK(c <= k::kSqueezeExciteMaxC && cs >= 1 && cs <= k::kSqueezeExciteMaxCs, kUnsupported, name_,
                 "SqueezeExcite with " << c << " channels squeezed to " << cs << " (the CUDA kernels take up to "
                                       << k::kSqueezeExciteMaxC << " and " << k::kSqueezeExciteMaxCs << ")");
    KILNRT_CHECK(x.nhwc == y.nhwc || hw == 1, kInternal, name_, "SqueezeExcite between NHWC and NCHW storage");
    a.dt = float_code(x.dtype);
    a.x = x.data;
    a.y = y.data;
    a.n = n;
    a.c = c;
    a.hw = hw;
    a.cs = cs;
    a.nhwc = x.nhwc && hw > 1;
    a.act = static_cast<int>(p_.act.act);
    a.act_a = p_.act.a;
    a.act_b = p_.act.b;
    a.gate = static_cast<int>(p_.gate.act);
    a.gate_a = p_.gate.a;
    a.gate_b = p_.gate.b;
    a.workspace = l.workspace;
    a.workspace_bytes = l.workspace_bytes;
    KILNRT_CHECK(a.dt >= 0, kUnsupported, name_, "SqueezeExcite of dtype " << dtype_name(x.dtype));
    KILNRT_CHECK(static_cast<size_t>(n * (c + cs) + 64) * sizeof(float) <= l.workspace_bytes, kUnsupported, name_,
                 "SqueezeExcite of " << n << " x " << c << " channels needs more than the " << l.workspace_bytes
                                     << "-byte workspace");
    if (y.numel() == 0) return;
    check_launch(k::squeeze_excite(a, l.stream), name_, "squeeze_excite");
  }

 private:
  std::string name_;
  ops::nn::SqueezeExciteParams p_;
};

std::string supports_squeeze_excite(const ir::Node& n, const ir::Graph& g) {
  if (n.domain != ops::nn::kFusedConvDomain) return "SqueezeExcite must be in the com.kilnrt domain";
  if (n.inputs.size() != 5 || n.outputs.size() != 1) return "takes X, W1, B1, W2, B2 and gives Y";
  try {
    ops::nn::read_squeeze_excite(n);
  } catch (const Error& e) {
    return e.message();
  }
  const DType t = value_dtype(g, n.inputs[0]);
  if (!dtype_is_one_of(t, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}))
    return "X has dtype " + std::string(dtype_name(t));
  for (size_t i : {size_t(1), size_t(3)}) {
    if (!g.is_constant(n.inputs[i])) return "W1 / W2 must be constants";
    const Tensor& w = g.constants.at(n.inputs[i]);
    if (w.rank() < 1) return "W1 / W2 must have a dim 0";
  }
  const int64_t cs = g.constants.at(n.inputs[1]).dim(0), c = g.constants.at(n.inputs[3]).dim(0);
  if (c > kilnrt::cuda::kernels::kSqueezeExciteMaxC || cs > kilnrt::cuda::kernels::kSqueezeExciteMaxCs)
    return "more than " + std::to_string(kilnrt::cuda::kernels::kSqueezeExciteMaxC) + " channels or " +
           std::to_string(kilnrt::cuda::kernels::kSqueezeExciteMaxCs) + " squeezed channels";
  return "";
}

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:SqueezeExcite"}, supports_squeeze_excite,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<SqueezeExciteLayer>(a.node);
                           });

}  // namespace
}  // namespace kilnrt::backends::cuda
