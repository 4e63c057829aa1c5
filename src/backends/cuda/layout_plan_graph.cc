// Graph side of the layout plan (layout_plan.h): which nodes are layout-agnostic elementwise ops, reductions that
// read either layout, or Transposes between NCHW and NHWC; which value types are layout-free.
#include <set>
#include <string>

#include "ops/nn/conv/cuda/conv_kernels.h"
#include "backends/cuda/layout_plan.h"
#include "ir/graph.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

// Ops whose CUDA layers (unary_layer.cc, binary_layer.cc, where_layer.cc ... in math/unary, math/binary, math/logic)
// compute from the launch shapes alone, elementwise with numpy broadcasting: they run on permuted logical shapes
// unchanged.
bool elementwise_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "Add",       "Sub",         "Mul",       "Div",  "Pow",  "Max",  "Min",  "Sum",  "Relu",     "Sigmoid",
      "Tanh",      "HardSigmoid", "HardSwish", "Erf",  "Exp",  "Log",  "Sqrt", "Neg",  "Abs",      "Reciprocal",
      "LeakyRelu", "Elu",         "Softplus",  "Gelu", "Clip", "Mish", "Selu", "Celu", "Softsign", "FusedPointwise"};
  return ops.count(op) != 0;
}

bool reduce_op(const std::string& op) {
  static const std::set<std::string> ops = {"ReduceSum",    "ReduceMean",      "ReduceMax", "ReduceMin",
                                            "ReduceProd",   "ReduceSumSquare", "ReduceL1",  "ReduceL2",
                                            "ReduceLogSum", "ReduceLogSumExp"};
  return ops.count(op) != 0;
}

int rank_of(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = g.type_of(v);
  return t && t->has_shape ? static_cast<int>(t->shape.size()) : -1;
}

// A reduction of a 4-D value reads NHWC storage in place when its kept dims come in the same order either way:
// C reduced, or both H and W reduced.
bool reduction_reads_either(const ir::Node& n, const ir::Graph& g) {
  std::vector<int64_t> axes;
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    auto it = g.constants.find(n.inputs[1]);
    if (it == g.constants.end()) return false;
    axes = ops::tensor_to_int64s(it->second);
  } else if (n.has_attr("axes")) {
    axes = n.attr_ints("axes");
  }
  if (axes.empty()) return n.attr_int("noop_with_empty_axes", 0) == 0;  // everything reduced
  bool red[4] = {false, false, false, false};
  for (int64_t a : axes) {
    if (a < -4 || a > 3) return false;
    red[a < 0 ? a + 4 : a] = true;
  }
  return red[1] || (red[2] && red[3]);
}

}  // namespace

LayoutKind layout_kind_of(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.empty() || n.outputs.empty()) return LayoutKind::kFixed;
  if (elementwise_op(n.op_type)) return n.outputs.size() == 1 ? LayoutKind::kElementwise : LayoutKind::kFixed;
  if (rank_of(g, n.inputs[0]) != 4) return LayoutKind::kFixed;
  if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") return LayoutKind::kReader;
  if (reduce_op(n.op_type)) return reduction_reads_either(n, g) ? LayoutKind::kReader : LayoutKind::kFixed;
  if (n.op_type == "Transpose" && n.has_attr("perm")) {
    const std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm == std::vector<int64_t>{0, 3, 1, 2}) return LayoutKind::kToNhwcView;
    if (perm == std::vector<int64_t>{0, 2, 3, 1}) return LayoutKind::kFromNhwcView;
  }
  return LayoutKind::kFixed;
}

bool depthwise_conv(const ir::Node& n, const ir::Graph& g) {
  if (n.op_type != "Conv" && n.op_type != "FusedConv") return false;
  if (n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) return false;
  const Tensor& w = g.constants.at(n.inputs[1]);
  const int64_t group = n.attr_int("group", 1);
  return w.rank() >= 3 && group > 1 && w.dim(0) == group && w.dim(1) == 1;
}

bool depthwise_nhwc_fast(const ir::Node& n, const ir::Graph& g) {
  if (!depthwise_conv(n, g) || g.constants.at(n.inputs[1]).dim(0) % 8 != 0) return false;
  const ir::TensorType* x = g.type_of(n.inputs[0]);
  const bool big_batch =
      x && x->has_shape && x->shape.size() == 4 && x->shape[0].known() && x->shape[0].value >= kFastDepthwiseMinBatch;
  return big_batch && kilnrt::cuda::kernels::depthwise_nhwc_vec_enabled();
}

bool layout_free_type(const ir::TensorType* t) {
  if (!t || !t->has_shape || t->shape.size() > 4) return false;
  std::vector<ir::Dim> p(4, ir::Dim(1));
  for (size_t k = 0; k < t->shape.size(); ++k) p[4 - t->shape.size() + k] = t->shape[k];
  auto one = [](const ir::Dim& d) { return d.known() && d.value == 1; };
  return one(p[1]) || (one(p[2]) && one(p[3]));
}

}  // namespace kilnrt::backends::cuda
