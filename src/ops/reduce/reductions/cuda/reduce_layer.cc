// CUDA layer of the Reduce* family (and GlobalAveragePool / GlobalMaxPool, reduce_layer.h): a contiguous block of
// reduced axes runs as [outer, r, inner] (reduce.cu; wide spatial reductions of NHWC storage: reduce_nhwc.cu);
// scattered axes are first permuted into the workspace.
#include <algorithm>
#include <map>

#include "ops/reduce/reductions/cuda/reduce_layer.h"

#include "ops/reduce/reductions/cuda/reduce_bool_layer.h"
#include "ops/op_registry.h"
#include "ops/reduce/reductions/cuda/reduce_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

bool reduce_op(const std::string& op, k::ReduceOp* out) {
  static const std::map<std::string, k::ReduceOp> ops = {{"ReduceSum", k::ReduceOp::kSum},
                                                         {"ReduceMean", k::ReduceOp::kMean},
                                                         {"ReduceMax", k::ReduceOp::kMax},
                                                         {"ReduceMin", k::ReduceOp::kMin},
                                                         {"ReduceProd", k::ReduceOp::kProd},
                                                         {"ReduceSumSquare", k::ReduceOp::kSumSquare},
                                                         {"ReduceL1", k::ReduceOp::kL1},
                                                         {"ReduceL2", k::ReduceOp::kL2},
                                                         {"ReduceLogSum", k::ReduceOp::kLogSum},
                                                         {"ReduceLogSumExp", k::ReduceOp::kLogSumExp},
                                                         {"GlobalAveragePool", k::ReduceOp::kMean},
                                                         {"GlobalMaxPool", k::ReduceOp::kMax}};
  auto it = ops.find(op);
  if (it == ops.end()) return false;
  *out = it->second;
  return true;
}

class ReduceLayer final : public CudaLayer {
 public:
  ReduceLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {
    reduce_op(n.op_type, &op_);
    global_ = n.op_type.rfind("Global", 0) == 0;
  }
  std::string tactic() const override { return "kernel:reduce"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    Shape xs = l.inputs[0].shape;
    const int rank = static_cast<int>(xs.size());
    std::vector<int64_t> axes;
    if (global_) {
      for (int d = 2; d < rank; ++d) axes.push_back(d);
    } else if (l.inputs.size() > 1 && l.inputs[1].present) {
      axes = ops::tensor_to_int64s(*l.inputs[1].host);
    } else if (node_.has_attr("axes")) {
      axes = node_.attr_ints("axes");
    }
    std::vector<bool> reduced(rank, false);
    if (axes.empty()) {
      const bool noop = node_.attr_int("noop_with_empty_axes", 0) != 0;
      if (!noop) std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) reduced[ops::normalize_axis(a, rank, node_)] = true;
    if (l.inputs[0].nhwc && rank == 4) {
      // NHWC storage (layout_plan.h kReader: the plan checked that the result's memory is the same): reduce the
      // stored [N,H,W,C] over the same logical axes.
      xs = {xs[0], xs[2], xs[3], xs[1]};
      reduced = {reduced[0], reduced[2], reduced[3], reduced[1]};
    }
    const void* x = l.inputs[0].data;
    void* y = l.outputs[0].data;
    const size_t es = dtype_size(l.inputs[0].dtype);
    // Contiguous block of reduced axes -> [outer, r, inner]; otherwise permute kept-then-reduced into the workspace.
    int lo = rank, hi = -1;
    for (int d = 0; d < rank; ++d)
      if (reduced[d] && xs[d] != 1) {
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
    bool block = true;
    for (int d = lo; d <= hi; ++d) block &= reduced[d] || xs[d] == 1;
    int64_t outer = 1, r = 1, inner = 1;
    if (hi < 0) {  // nothing (non-trivial) reduced
      outer = shape_numel(xs);
    } else if (block) {
      for (int d = 0; d < lo; ++d) outer *= xs[d];
      for (int d = lo; d <= hi; ++d) r *= xs[d];
      for (int d = hi + 1; d < rank; ++d) inner *= xs[d];
    } else {
      KILNRT_CHECK(l.inputs[0].numel() * es <= l.workspace_bytes && rank <= k::kMaxDims, kUnsupported, name_,
                   "reduction over scattered axes of a tensor larger than the workspace");
      std::vector<int64_t> in_st(rank, 1);
      for (int d = rank - 2; d >= 0; --d) in_st[d] = in_st[d + 1] * xs[d + 1];
      std::vector<int> order;
      for (int d = 0; d < rank; ++d)
        if (!reduced[d]) order.push_back(d);
      for (int d = 0; d < rank; ++d)
        if (reduced[d]) order.push_back(d);
      k::Strided s;
      s.rank = rank;
      int64_t stride = 1;
      for (int i = rank - 1; i >= 0; --i) {
        s.dims[i] = xs[order[i]];
        s.in_strides[i] = in_st[order[i]];
        s.out_strides[i] = stride;
        stride *= xs[order[i]];
      }
      check_launch(k::strided_copy(l.workspace, x, s, es, l.stream), name_, "strided_copy");
      x = l.workspace;
      for (int d = 0; d < rank; ++d) (reduced[d] ? r : outer) *= xs[d];
    }
    if (l.inputs[0].dtype == DType::kFloat64) {
      check_launch(
          k::reduce_f64(op_, static_cast<const double*>(x), static_cast<double*>(y), outer, r, inner, l.stream), name_,
          "reduce_f64");
      return;
    }
    const int wide_op = op_ == k::ReduceOp::kSum    ? 0
                        : op_ == k::ReduceOp::kMean ? 1
                        : op_ == k::ReduceOp::kMax  ? 2
                        : op_ == k::ReduceOp::kMin  ? 3
                                                    : -1;
    if (l.inputs[0].nhwc && wide_op >= 0 && inner >= 32 && r >= 32 && outer <= 65535) {
      // Spatial reduction of NHWC storage ([N, H*W, C]): reduce_nhwc.cu.
      check_launch(k::reduce_mid_wide(wide_op, float_code(l.inputs[0].dtype), x, y, outer, r, inner, l.stream), name_,
                   "reduce_mid_wide");
      return;
    }
    check_launch(k::reduce(op_, float_code(l.inputs[0].dtype), x, y, outer, r, inner, l.stream), name_, "reduce");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
  k::ReduceOp op_ = k::ReduceOp::kSum;
  bool global_ = false;
};

}  // namespace

std::string reduce_layer_supports(const ir::Node& n, const ir::Graph& g) {  // float64: kernels::reduce_f64
  if (reduce_is_bool(n, g)) return reduce_bool_supports(n, g);
  return value_dtype(g, n.inputs.at(0)) == DType::kFloat64 ? "" : float_input(n, g);
}

std::unique_ptr<CudaLayer> make_reduce_layer(const LayerCreateArgs& a) {
  if (reduce_is_bool(a.node, a.graph)) return make_reduce_bool(a);
  return std::make_unique<ReduceLayer>(a.node, a.opset);
}

KILNRT_REGISTER_CUDA_LAYER({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                            "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"},
                           reduce_layer_supports, make_reduce_layer);

}  // namespace kilnrt::backends::cuda
