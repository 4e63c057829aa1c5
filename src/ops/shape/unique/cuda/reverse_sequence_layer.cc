// CUDA layer of ReverseSequence (any 1-, 2-, 4- or 8-byte dtype, int64 sequence_lens on the device). Kernel:
// reverse_sequence.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/unique/cuda/reverse_sequence_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class ReverseSequenceLayer final : public CudaLayer {
 public:
  explicit ReverseSequenceLayer(const ir::Node& n)
      : name_(n.describe()), batch_axis_(n.attr_int("batch_axis", 1)), time_axis_(n.attr_int("time_axis", 0)) {}
  std::string tactic() const override { return "kernel:reverse-sequence"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    KILNRT_CHECK(s.size() >= 2 && ((batch_axis_ == 1 && time_axis_ == 0) || (batch_axis_ == 0 && time_axis_ == 1)),
                 kUnsupported, name_, "ReverseSequence needs rank >= 2 and axes {0, 1}");
    const int64_t b = s[batch_axis_];
    KILNRT_CHECK(l.inputs[1].numel() == b, kInvalidArgument, name_,
                 "sequence_lens has " << l.inputs[1].numel() << " values for a batch of " << b);
    int64_t inner = 1;
    for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
    check_launch(k::reverse_sequence(l.inputs[0].data, static_cast<const int64_t*>(l.inputs[1].data), l.outputs[0].data,
                                     s[0], s[1], inner, time_axis_ == 0, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "reverse_sequence");
  }

 private:
  std::string name_;
  int64_t batch_axis_, time_axis_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"ReverseSequence"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(1)) != DType::kInt64) return "sequence_lens must be int64";
      const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
      return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
    },
    factory<ReverseSequenceLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
