// CUDA layers on own kernels (kernels/nn.cu): MaxPool / AveragePool (2-D; 3-D in layers_volume.cc), GlobalAveragePool / GlobalMaxPool,
// Softmax / LogSoftmax, LayerNormalization, BatchNormalization (inference, folded to a per-channel affine at load)
// and the Reduce* family.
#include <algorithm>
#include <cmath>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/conv_kernels.h"
#include "ops/nn/softmax/cuda/softmax_f64.h"
#include "backends/cuda/layers_bits.h"
#include "backends/cuda/layers_misc_gaps.h"
#include "backends/cuda/layers_volume.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::string float_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

// ---- pooling -----------------------------------------------------------------------------------------------------
class PoolLayer final : public CudaLayer {
 public:
  explicit PoolLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:pool2d"; }
  bool supports_16bit() const override { return true; }
  // 2-D pooling over NHWC storage (kernels/nhwc_pool.cu; layout_plan.h); not with MaxPool's Indices output.
  bool supports_nhwc() const override {
    return node_.outputs.size() == 1 && node_.attr_ints("kernel_shape", std::vector<int64_t>{}).size() == 2;
  }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& ys = l.outputs[0].shape;
    const bool one_d = xs.size() == 3;
    k::Pool2d p;
    p.max = node_.op_type == "MaxPool";
    p.n = xs[0];
    p.c = xs[1];
    p.h = one_d ? 1 : xs[2];
    p.w = xs.back();
    p.oh = one_d ? 1 : ys[2];
    p.ow = ys.back();
    const size_t sd = xs.size() - 2;
    const auto ks = node_.attr_ints("kernel_shape");
    const auto st = node_.attr_ints("strides", std::vector<int64_t>(sd, 1));
    const auto dil = node_.attr_ints("dilations", std::vector<int64_t>(sd, 1));
    std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
    const std::string auto_pad = node_.attr_string("auto_pad", std::string("NOTSET"));
    const int64_t in_d[2] = {p.h, p.w}, out_d[2] = {p.oh, p.ow};
    if (auto_pad == "VALID") pads.assign(2 * sd, 0);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t d = 0; d < sd; ++d) {
        const int i = one_d ? 1 : static_cast<int>(d);
        const int64_t total = std::max<int64_t>(0, (out_d[i] - 1) * st[d] + (ks[d] - 1) * dil[d] + 1 - in_d[i]);
        pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pads[d + sd] = total - pads[d];
      }
    }
    if (one_d) {
      p.kw = static_cast<int>(ks[0]);
      p.sw = static_cast<int>(st[0]);
      p.dw = static_cast<int>(dil[0]);
      p.pw = static_cast<int>(pads[0]);
    } else {
      p.kh = static_cast<int>(ks[0]);
      p.kw = static_cast<int>(ks[1]);
      p.sh = static_cast<int>(st[0]);
      p.sw = static_cast<int>(st[1]);
      p.dh = static_cast<int>(dil[0]);
      p.dw = static_cast<int>(dil[1]);
      p.ph = static_cast<int>(pads[0]);
      p.pw = static_cast<int>(pads[1]);
    }
    p.count_include_pad = node_.attr_int("count_include_pad", 0) != 0;
    KILNRT_CHECK(l.inputs[0].nhwc == l.outputs[0].nhwc, kInternal, name_, "pooling between NHWC and NCHW storage");
    if (l.inputs[0].nhwc) {
      check_launch(k::pool2d_nhwc(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, p, l.stream),
                   name_, "pool2d_nhwc");
      return;
    }
    check_launch(k::pool2d(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, p, l.stream), name_,
                 "pool2d");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

// ---- reductions ------------------------------------------------------------------------------------------------
bool reduce_op(const std::string& op, k::ReduceOp* out) {
  static const std::map<std::string, k::ReduceOp> ops = {
      {"ReduceSum", k::ReduceOp::kSum},     {"ReduceMean", k::ReduceOp::kMean},
      {"ReduceMax", k::ReduceOp::kMax},     {"ReduceMin", k::ReduceOp::kMin},
      {"ReduceProd", k::ReduceOp::kProd},   {"ReduceSumSquare", k::ReduceOp::kSumSquare},
      {"ReduceL1", k::ReduceOp::kL1},       {"ReduceL2", k::ReduceOp::kL2},
      {"ReduceLogSum", k::ReduceOp::kLogSum}, {"ReduceLogSumExp", k::ReduceOp::kLogSumExp},
      {"GlobalAveragePool", k::ReduceOp::kMean}, {"GlobalMaxPool", k::ReduceOp::kMax}};
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
      if (reduced[d] && xs[d] != 1) { lo = std::min(lo, d); hi = std::max(hi, d); }
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
      KILNRT_CHECK(l.inputs[0].numel() * es <= l.workspace_bytes && rank <= k::kMaxDims, kUnsupported,
                   name_, "reduction over scattered axes of a tensor larger than the workspace");
      std::vector<int64_t> in_st(rank, 1);
      for (int d = rank - 2; d >= 0; --d) in_st[d] = in_st[d + 1] * xs[d + 1];
      std::vector<int> order;
      for (int d = 0; d < rank; ++d) if (!reduced[d]) order.push_back(d);
      for (int d = 0; d < rank; ++d) if (reduced[d]) order.push_back(d);
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
      check_launch(k::reduce_f64(op_, static_cast<const double*>(x), static_cast<double*>(y), outer, r, inner, l.stream),
                   name_, "reduce_f64");
      return;
    }
    const int wide_op = op_ == k::ReduceOp::kSum ? 0 : op_ == k::ReduceOp::kMean ? 1
                      : op_ == k::ReduceOp::kMax ? 2 : op_ == k::ReduceOp::kMin ? 3 : -1;
    if (l.inputs[0].nhwc && wide_op >= 0 && inner >= 32 && r >= 32 && outer <= 65535) {
      // Spatial reduction of NHWC storage ([N, H*W, C]): kernels/nhwc_reduce.cu.
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

// ---- Softmax / LayerNormalization / BatchNormalization -----------------------------------------------------------
class SoftmaxLayer final : public CudaLayer {
 public:
  SoftmaxLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:softmax"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int rank = static_cast<int>(xs.size());
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", opset_ >= 13 ? -1 : 1), rank, node_));
    int64_t outer = 1, n = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    if (opset_ >= 13) {
      n = xs[axis];
      for (int d = axis + 1; d < rank; ++d) inner *= xs[d];
    } else {
      for (int d = axis; d < rank; ++d) n *= xs[d];
    }
    if (l.inputs[0].dtype == DType::kFloat64) {  // softmax_f64.cu: storage and math in double
      check_launch(k::f64::softmax(static_cast<const double*>(l.inputs[0].data),
                                   static_cast<double*>(l.outputs[0].data), outer, n, inner,
                                   node_.op_type == "LogSoftmax", l.stream),
                   name_, "softmax_f64");
      return;
    }
    check_launch(k::softmax(float_code(l.inputs[0].dtype), l.inputs[0].data, l.outputs[0].data, outer, n, inner,
                            node_.op_type == "LogSoftmax", l.stream),
                 name_, "softmax");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

class LayerNormLayer final : public CudaLayer {
  bool stats_ = false;
 public:
  explicit LayerNormLayer(const ir::Node& n) : node_(n), name_(n.describe()) {
    for (size_t i = 1; i < n.outputs.size(); ++i) stats_ |= !n.outputs[i].empty();
  }
  std::string tactic() const override { return "kernel:layernorm"; }
  bool supports_16bit() const override { return !stats_; }  // Mean / InvStdDev outputs: float32 island
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int rank = static_cast<int>(xs.size());
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", -1), rank, node_));
    int64_t rows = 1, n = 1;
    for (int d = 0; d < axis; ++d) rows *= xs[d];
    for (int d = axis; d < rank; ++d) n *= xs[d];
    auto param = [&](size_t i) -> const void* {
      if (i >= l.inputs.size() || !l.inputs[i].present) return nullptr;
      KILNRT_CHECK(l.inputs[i].numel() == n, kUnsupported, name_,
                   "LayerNormalization input " << i << " of shape " << shape_to_string(l.inputs[i].shape)
                                               << " must have the normalized shape's " << n << " elements");
      KILNRT_CHECK(l.inputs[i].dtype == l.inputs[0].dtype, kUnsupported, name_,
                   "LayerNormalization scale / bias must have X's dtype");
      return l.inputs[i].data;
    };
    auto out = [&](size_t i) -> void* {
      return i < l.outputs.size() && l.outputs[i].present ? l.outputs[i].data : nullptr;
    };
    // Mean / InvStdDev outputs (float32 in the graph) are float32 scratch written by the kernel as float: in 16-bit
    // engines they are stored 16-bit, so they are written through the float32 island path (not supported here).
    for (size_t i = 1; i < l.outputs.size(); ++i)
      KILNRT_CHECK(!l.outputs[i].present || l.outputs[i].dtype == DType::kFloat32, kUnsupported, name_,
                   "LayerNormalization Mean / InvStdDev outputs in a 16-bit engine");
    check_launch(k::layernorm(float_code(l.inputs[0].dtype), l.inputs[0].data, param(1), param(2), out(0),
                              static_cast<float*>(out(1)), static_cast<float*>(out(2)), rows, n,
                              node_.attr_float("epsilon", 1e-5f), l.stream),
                 name_, "layernorm");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

class BatchNormLayer final : public CudaLayer {
 public:
  explicit BatchNormLayer(const LayerCreateArgs& a) : name_(a.node.describe()) {
    const ir::Node& n = a.node;
    const float eps = n.attr_float("epsilon", 1e-5f);
    const Tensor& scale = a.graph.constants.at(n.inputs[1]);
    const Tensor& bias = a.graph.constants.at(n.inputs[2]);
    const Tensor& mean = a.graph.constants.at(n.inputs[3]);
    const Tensor& var = a.graph.constants.at(n.inputs[4]);
    const int64_t c = scale.numel();
    Tensor mul = Tensor::empty(DType::kFloat32, {c}), add = Tensor::empty(DType::kFloat32, {c});
    for (int64_t i = 0; i < c; ++i) {
      const double inv = 1.0 / std::sqrt(double(var.data<float>()[i]) + eps);
      mul.data<float>()[i] = static_cast<float>(scale.data<float>()[i] * inv);
      add.data<float>()[i] = static_cast<float>(bias.data<float>()[i] - mean.data<float>()[i] * scale.data<float>()[i] * inv);
    }
    a_ = static_cast<const float*>(a.weights.upload(n.name + "/bn_scale", mul));
    b_ = static_cast<const float*>(a.weights.upload(n.name + "/bn_shift", add));
  }
  std::string tactic() const override { return "kernel:channel-affine"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1, 2, 3, 4}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    check_launch(k::channel_affine(float_code(l.inputs[0].dtype), l.inputs[0].data, a_, b_, l.outputs[0].data,
                                   xs[0], xs.size() > 1 ? xs[1] : 1, inner, l.stream),
                 name_, "channel_affine");
  }

 private:
  std::string name_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
};

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    for (const char* op : {"MaxPool", "AveragePool"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               if (max_pool_needs_general(n, g)) return max_pool_general_supports(n, g);  // Indices / 8-bit
               if (pool_is_3d(n, g)) return pool3d_supports(n, g);                      // layers_volume.h
               const ir::TensorType* t = g.type_of(n.inputs.at(0));
               if (t && t->has_shape && t->shape.size() != 4 && t->shape.size() != 3) return "only 1-D and 2-D pooling";
               return float_input(n, g);
             },
             [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
               if (max_pool_needs_general(a.node, a.graph)) return make_max_pool_general(a);
               if (pool_is_3d(a.node, a.graph)) return make_pool3d(a);
               return std::make_unique<PoolLayer>(a.node);
             }});
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                           "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "GlobalAveragePool",
                           "GlobalMaxPool"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {  // float64: kernels::reduce_f64
               if (reduce_is_bool(n, g)) return reduce_bool_supports(n, g);  // layers_bits.cc
               return value_dtype(g, n.inputs.at(0)) == DType::kFloat64 ? "" : float_input(n, g);
             },
             [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
               if (reduce_is_bool(a.node, a.graph)) return make_reduce_bool(a);
               return std::make_unique<ReduceLayer>(a.node, a.opset);
             }});
    for (const char* op : {"Softmax", "LogSoftmax"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {  // float64: softmax_f64.cu
               return value_dtype(g, n.inputs.at(0)) == DType::kFloat64 ? "" : float_input(n, g);
             },
             [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
               return std::make_unique<SoftmaxLayer>(a.node, a.opset);
             }});
    r.add({"LayerNormalization", float_input, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<LayerNormLayer>(a.node);
           }});
    r.add({"BatchNormalization",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (n.inputs.size() < 5) return "needs scale, B, mean and var";
             if (batch_norm_needs_general(n, g)) return batch_norm_general_supports(n, g);  // device parameters
             for (size_t i = 1; i < 5; ++i)
               if (!g.is_constant(n.inputs[i]) || value_dtype(g, n.inputs[i]) != DType::kFloat32)
                 return "scale/B/mean/var must be float32 constants";
             if (n.attr_int("training_mode", 0) != 0) return "training mode";
             for (size_t i = 1; i < n.outputs.size(); ++i)
               if (!n.outputs[i].empty()) return "running statistics outputs";
             return float_input(n, g);
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             if (batch_norm_needs_general(a.node, a.graph)) return make_batch_norm_general(a);
             return std::make_unique<BatchNormLayer>(a);
           }});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
