// The CUDA layer of Slice: one strided-copy kernel (starts / ends / axes / steps read on the host from opset 10, from
// attributes before).
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/strided_copy_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class SliceLayer final : public CudaLayer {
 public:
  SliceLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1, 2, 3, 4}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    check_rank(xs.size(), name_);
    const int rank = static_cast<int>(xs.size());
    std::vector<int64_t> starts, ends, axes, steps;
    auto host_ints = [&](size_t i) {
      return i < l.inputs.size() && l.inputs[i].present ? ops::tensor_to_int64s(*l.inputs[i].host)
                                                        : std::vector<int64_t>{};
    };
    if (opset_ < 10) {
      starts = node_.attr_ints("starts");
      ends = node_.attr_ints("ends");
      axes = node_.attr_ints("axes", std::vector<int64_t>{});
    } else {
      starts = host_ints(1);
      ends = host_ints(2);
      axes = host_ints(3);
      steps = host_ints(4);
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> begin(rank, 0), step(rank, 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int a = static_cast<int>(ops::normalize_axis(axes[i], rank, node_));
      const int64_t dim = xs[a];
      int64_t s = starts[i];
      if (s < 0) s += dim;
      s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
      begin[a] = s;
      step[a] = steps[i];
    }
    const auto in_st = contiguous_strides(xs), out_st = contiguous_strides(l.outputs[0].shape);
    k::Strided st;
    st.rank = rank;
    for (int d = 0; d < rank; ++d) {
      st.dims[d] = l.outputs[0].shape[d];
      st.in_strides[d] = in_st[d] * step[d];
      st.out_strides[d] = out_st[d];
      st.in_offset += begin[d] * in_st[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, st, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

KILNRT_REGISTER_CUDA_LAYER({"Slice"}, any_dtype, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
  return std::make_unique<SliceLayer>(a.node, a.opset);
});

}  // namespace
}  // namespace kilnrt::backends::cuda
