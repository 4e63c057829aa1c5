// CUDA layers of shape/reshape_ops: Reshape, Squeeze and Unsqueeze are views (alias_layer.h: no kernel, the output
// aliases the input; their shape / axes input is read on the host); Transpose and Expand run one strided-copy kernel.
#include "ops/cuda/alias_layer.h"
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/strided_copy_layer.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// ---- Transpose -------------------------------------------------------------------------------------------------
class TransposeLayer final : public CudaLayer {
 public:
  explicit TransposeLayer(const ir::Node& n) : name_(n.describe()) {
    if (n.has_attr("perm")) perm_ = n.attr_ints("perm");
  }
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& in = l.inputs[0].shape;
    check_rank(in.size(), name_);
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) perm.push_back(d);
    const auto in_st = contiguous_strides(in);
    const auto out_st = contiguous_strides(l.outputs[0].shape);
    k::Strided s;
    s.rank = static_cast<int>(in.size());
    for (int d = 0; d < s.rank; ++d) {
      s.dims[d] = in[perm[d]];
      s.in_strides[d] = in_st[perm[d]];
      s.out_strides[d] = out_st[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
  std::vector<int64_t> perm_;
};

class ExpandLayer final : public CudaLayer {
 public:
  explicit ExpandLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ys = l.outputs[0].shape;
    check_rank(ys.size(), name_);
    const k::Broadcast3 bc = make_broadcast(ys, {ys, l.inputs[0].shape});
    const auto out_st = contiguous_strides(ys);
    const auto in_st = contiguous_strides(l.inputs[0].shape);
    k::Strided s;
    s.rank = static_cast<int>(ys.size());
    for (int d = 0; d < s.rank; ++d) {
      s.dims[d] = ys[d];
      s.out_strides[d] = out_st[d];
      s.in_strides[d] = bc.contiguous_same ? in_st[d] : bc.s1[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

KILNRT_REGISTER_CUDA_LAYER({"Reshape", "Squeeze", "Unsqueeze"}, nullptr,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<AliasLayer>(a.node, a.opset);
                           });
KILNRT_REGISTER_CUDA_LAYER({"Transpose"}, any_dtype, factory<TransposeLayer>());
KILNRT_REGISTER_CUDA_LAYER({"Expand"}, any_dtype, factory<ExpandLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
