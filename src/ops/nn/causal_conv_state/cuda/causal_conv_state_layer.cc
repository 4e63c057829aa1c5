// The CUDA layer of CausalConvWithState (optional bias / past_state, silu / swish), on the kernel of
// causal_conv_state_kernels.h in the CPU reference's arithmetic. Float32; float16 / bfloat16 tensors run as float32
// islands (float32_island.h), which round like the CPU reference does.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_kernel_io.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/nn/causal_conv_state/cuda/causal_conv_state_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace float32_kernel_io;
namespace la = kilnrt::cuda::kernels::linatt;

// ---- CausalConvWithState
// ---------------------------------------------------------------------------------------------
class CausalConvLayer final : public CudaLayer {
 public:
  explicit CausalConvLayer(const ir::Node& n) : name_(n.describe()) {
    const std::string act = n.attr_string("activation", "none");
    KILNRT_CHECK(act == "none" || act == "silu" || act == "swish", kInvalidModel, name_,
                 "activation must be none, silu or swish, got '" << act << "'");
    silu_ = act != "none";
  }
  std::string tactic() const override { return "kernel:causal-conv-state"; }
  void enqueue(LayerLaunch& l) override {
    check_float32(l, name_);
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    KILNRT_CHECK(xs.size() == 3, kInvalidModel, name_, "input must be [B, C, L], got " << shape_to_string(xs));
    la::CausalConvArgs a;
    a.batch = xs[0];
    a.channels = xs[1];
    a.length = xs[2];
    KILNRT_CHECK(ws.size() == 3 && ws[0] == a.channels && ws[1] == 1 && ws[2] >= 1, kInvalidModel, name_,
                 "weight must be [C, 1, K] with C = " << a.channels << ", got " << shape_to_string(ws));
    a.kernel = ws[2];
    if (has(l, 2)) {
      KILNRT_CHECK(l.inputs[2].numel() == a.channels, kInvalidModel, name_,
                   "bias has shape " << shape_to_string(l.inputs[2].shape) << ", expected [" << a.channels << "]");
      a.bias = f32_in(l, 2);
    }
    if (has(l, 3)) {
      KILNRT_CHECK(l.inputs[3].shape == (Shape{a.batch, a.channels, a.kernel - 1}), kInvalidModel, name_,
                   "past_state has shape " << shape_to_string(l.inputs[3].shape) << ", expected [" << a.batch << ", "
                                           << a.channels << ", " << a.kernel - 1 << "]");
      a.past = f32_in(l, 3);
    }
    a.x = f32_in(l, 0);
    a.w = f32_in(l, 1);
    a.y = f32_out(l, 0);
    a.present = f32_out(l, 1);
    a.silu = silu_;
    check_launch(la::causal_conv(a, l.stream), name_, "causal_conv");
  }

 private:
  std::string name_;
  bool silu_ = false;
};

std::string supports_causal_conv(const ir::Node& n, const ir::Graph& g) {
  const std::string act = n.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") return "activation must be none, silu or swish";
  if (!has(n, 0) || !has(n, 1)) return "input and weight are required";
  return float32_inputs(n, g, {0, 1, 2, 3});
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"CausalConvWithState"}, supports_causal_conv, factory<CausalConvLayer>());

}  // namespace kilnrt::backends::cuda
