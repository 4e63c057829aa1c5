// Dropout with its mask output (dropout_mask_layer.h): one kernel (dropout_mask.cu) copies x to y and writes the
// all-true mask; training_mode and ratio are checked on the host as the CPU reference does.
#include "ops/nn/flatten_dropout/cuda/dropout_mask_layer.h"

#include "ops/common/double_io.h"
#include "ops/nn/flatten_dropout/cuda/dropout_mask_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gp = kilnrt::cuda::kernels::dropout;

bool present(const ir::Node& n, size_t i) { return i < n.outputs.size() && !n.outputs[i].empty(); }

// ---- Dropout with the mask output -------------------------------------------------------------------------------
class DropoutMaskLayer final : public CudaLayer {
 public:
  explicit DropoutMaskLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), has_training_(n.inputs.size() > 2 && !n.inputs[2].empty()) {}
  std::string tactic() const override { return "kernel:dropout-identity-mask"; }
  bool supports_16bit() const override { return true; }  // y is a byte copy of x in x's storage dtype
  // training_mode (and then ratio) are read on the host, as the CPU reference checks them; without training_mode
  // nothing is read (ratio alone does not matter in inference).
  std::vector<int> host_inputs() const override {
    if (has_training_) return {1, 2};
    return {};
  }
  void enqueue(LayerLaunch& l) override {
    if (has_training_ && l.inputs.size() > 2 && l.inputs[2].present) {
      const LayerTensor& t = l.inputs[2];
      KILNRT_CHECK(t.host != nullptr, kInternal, name_, "training_mode's host value is missing");
      KILNRT_CHECK(t.host->numel() == 1 && t.host->dtype() == DType::kBool, kInvalidArgument, name_,
                   "training_mode must be a bool scalar, got " << dtype_name(t.host->dtype()) << " "
                                                               << shape_to_string(t.host->shape()));
      if (t.host->data<uint8_t>()[0] != 0) {
        double ratio = 0.5;
        if (l.inputs[1].present) {
          KILNRT_CHECK(l.inputs[1].host != nullptr, kInternal, name_, "ratio's host value is missing");
          const std::vector<double> r = ops::tensor_to_doubles(*l.inputs[1].host, node_);
          KILNRT_CHECK(r.size() == 1, kInvalidArgument, name_, "ratio must be a scalar");
          ratio = static_cast<float>(r[0]);
        }
        KILNRT_CHECK(ratio == 0.0, kUnsupported, name_,
                     "training_mode=true with ratio " << ratio << " (random dropout) is not supported");
      }
    }
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& mask = l.outputs.at(1);
    KILNRT_CHECK(mask.dtype == DType::kBool && mask.numel() == x.numel(), kInternal, name_,
                 "the mask must be bool of X's shape");
    void* y = l.outputs.at(0).present ? l.outputs[0].data : nullptr;
    check_launch(gp::dropout_identity_mask(x.data, y ? y : const_cast<void*>(x.data), dtype_size(x.dtype),
                                           static_cast<bool*>(mask.data), x.numel(), l.stream),
                 name_, "dropout_identity_mask");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool has_training_;
};

}  // namespace

bool dropout_has_mask(const ir::Node& n) { return n.op_type == "Dropout" && present(n, 1); }

std::string dropout_mask_supports(const ir::Node& n, const ir::Graph& g) {
  if (g.opset(n.domain) < 10) return "the mask output before opset 10";
  const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
  if (sz != 1 && sz != 2 && sz != 4 && sz != 8) return "unknown dtype";
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != DType::kBool)
    return "training_mode must be bool";
  return "";
}

std::unique_ptr<CudaLayer> make_dropout_mask(const LayerCreateArgs& a) {
  return std::make_unique<DropoutMaskLayer>(a.node);
}

}  // namespace kilnrt::backends::cuda
