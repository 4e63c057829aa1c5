// CUDA layer of ReduceMax / ReduceMin of bool tensors: any / all (an identity copy when the axes are empty and
// noop_with_empty_axes). Kernels: reduce_bool.cu, cuda/kernels/copy_bytes.h.
#include "ops/reduce/reductions/cuda/reduce_bool_layer.h"

#include <algorithm>

#include "cuda/kernels/copy_bytes.h"
#include "ops/op_registry.h"
#include "ops/reduce/reductions/cuda/reduce_bool_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class ReduceBoolLayer final : public CudaLayer {
 public:
  explicit ReduceBoolLayer(const ir::Node& n) : node_(n), name_(n.describe()), is_max_(n.op_type == "ReduceMax") {}
  std::string tactic() const override { return "kernel:reduce-bool"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(x.dtype == DType::kBool, kUnsupported, name_, "expected bool, got " << dtype_name(x.dtype));
    const int rank = static_cast<int>(x.shape.size());
    KILNRT_CHECK(rank <= kilnrt::cuda::kernels::kMaxDims, kUnsupported, name_,
                 "rank " << rank << " exceeds " << kilnrt::cuda::kernels::kMaxDims);
    std::vector<int64_t> axes;
    if (l.inputs.size() > 1 && l.inputs[1].present) {
      KILNRT_CHECK(l.inputs[1].host != nullptr, kInternal, name_, "axes' host value is missing");
      axes = ops::tensor_to_int64s(*l.inputs[1].host);
    } else if (node_.has_attr("axes")) {
      axes = node_.attr_ints("axes");
    }
    std::vector<bool> reduced(rank, false);
    if (axes.empty()) {
      if (node_.attr_int("noop_with_empty_axes", 0) != 0) {  // identity (the CPU reference returns X)
        check_launch(k::copy_bytes(y.data, x.data, static_cast<size_t>(x.numel()), l.stream), name_, "copy_bytes");
        return;
      }
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) reduced[ops::normalize_axis(a, rank, node_)] = true;
    k::ReduceBool p;
    p.is_max = is_max_;
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * x.shape[d + 1];
    p.n_out = 1;
    for (int d = 0; d < rank; ++d) {
      if (reduced[d]) {
        p.red_dims[p.red_rank] = x.shape[d];
        p.red_strides[p.red_rank++] = strides[d];
        p.n_red *= x.shape[d];
      } else {
        p.kept_dims[p.kept_rank] = x.shape[d];
        p.kept_strides[p.kept_rank++] = strides[d];
        p.n_out *= x.shape[d];
      }
    }
    KILNRT_CHECK(p.n_out == y.numel(), kInternal, name_,
                 "output has " << y.numel() << " values, the reduction gives " << p.n_out);
    check_launch(k::reduce_bool(p, static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.data), l.stream), name_,
                 "reduce_bool");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool is_max_;
};

}  // namespace

bool reduce_is_bool(const ir::Node& n, const ir::Graph& g) {
  return (n.op_type == "ReduceMax" || n.op_type == "ReduceMin") && !n.inputs.empty() &&
         value_dtype(g, n.inputs[0]) == DType::kBool;
}

std::string reduce_bool_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() > 1 && !n.inputs[1].empty() && value_dtype(g, n.inputs[1]) != DType::kInt64)
    return "axes must be int64";
  return "";
}

std::unique_ptr<CudaLayer> make_reduce_bool(const LayerCreateArgs& a) {
  return std::make_unique<ReduceBoolLayer>(a.node);
}

}  // namespace kilnrt::backends::cuda
