// CUDA layers for cases of BatchNormalization, MaxPool and Dropout that their main layers refuse
// (layers_misc_gaps.h says how the main registrations hand them over). Kernels: kernels/misc_gaps.cu, each with the
// arithmetic of the CPU reference (src/ops/nn/normalization/normalization.cc, pool.cc, misc.cc).
#include "backends/cuda/layers_misc_gaps.h"

#include "backends/cuda/kernels/misc_gaps.h"
#include "backends/cuda/pool3_geometry.h"
#include "ops/common/double_io.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gp = kilnrt::cuda::kernels::gaps;

bool present(const ir::Node& n, size_t i) { return i < n.outputs.size() && !n.outputs[i].empty(); }

// ---- BatchNormalization with device parameters -----------------------------------------------------------------
class BatchNormGeneralLayer final : public CudaLayer {
 public:
  explicit BatchNormGeneralLayer(const ir::Node& n)
      : name_(n.describe()), training_(n.attr_int("training_mode", 0) != 0), eps_(n.attr_float("epsilon", 1e-5f)),
        momentum_(n.attr_float("momentum", 0.9f)) {}
  std::string tactic() const override {
    return training_ ? "kernel:batchnorm-batch-stats" : "kernel:batchnorm-device-params";
  }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(x.shape.size() >= 2, kInvalidArgument, name_,
                 "X must be [N, C, ...], got " << shape_to_string(x.shape));
    gp::BatchNormArgs a;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.size = ops::nn::dims_product(x.shape, 2, static_cast<int64_t>(x.shape.size()));
    static const char* kNames[5] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 5; ++i) {
      const LayerTensor& t = l.inputs.at(i);
      KILNRT_CHECK(t.present && t.dtype == DType::kFloat32, kUnsupported, name_,
                   kNames[i] << " must be float32, got " << dtype_name(t.dtype));
      KILNRT_CHECK(i == 0 || t.numel() == a.c, kInvalidArgument, name_,
                   kNames[i] << " has " << t.numel() << " values for " << a.c << " channels");
    }
    a.x = static_cast<const float*>(x.data);
    a.scale = static_cast<const float*>(l.inputs[1].data);
    a.bias = static_cast<const float*>(l.inputs[2].data);
    a.mean = static_cast<const float*>(l.inputs[3].data);
    a.var = static_cast<const float*>(l.inputs[4].data);
    a.y = static_cast<float*>(l.outputs.at(0).data);
    auto out = [&](size_t i) -> float* {
      if (i >= l.outputs.size() || !l.outputs[i].present) return nullptr;
      KILNRT_CHECK(l.outputs[i].dtype == DType::kFloat32 && l.outputs[i].numel() == a.c, kInternal, name_,
                   "running statistics output " << i << " must be float32 with " << a.c << " values");
      return static_cast<float*>(l.outputs[i].data);
    };
    a.training = training_;
    a.running_mean = training_ ? out(1) : nullptr;
    a.running_var = training_ ? out(2) : nullptr;
    a.eps = eps_;
    a.momentum = momentum_;
    check_launch(gp::batch_norm_f32(a, l.stream), name_, "batch_norm");
  }

 private:
  std::string name_;
  bool training_;
  double eps_, momentum_;
};

// ---- MaxPool with Indices / 8-bit ----------------------------------------------------------------------------------
int pool_dtype_code(DType t) {
  return t == DType::kFloat32 ? 0 : t == DType::kInt8 ? 1 : t == DType::kUInt8 ? 2 : -1;
}

class MaxPoolGeneralLayer final : public CudaLayer {
 public:
  explicit MaxPoolGeneralLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), column_major_(n.attr_int("storage_order", 0) == 1) {}
  std::string tactic() const override { return "kernel:maxpool-argmax"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const int nd = static_cast<int>(x.shape.size()) - 2;
    KILNRT_CHECK(nd >= 1 && nd <= 3, kUnsupported, name_,
                 "MaxPool takes 1-D to 3-D inputs, got " << shape_to_string(x.shape));
    const int dt = pool_dtype_code(x.dtype);
    KILNRT_CHECK(dt >= 0, kUnsupported, name_, "dtype " << dtype_name(x.dtype) << " (this CUDA MaxPool takes float32, "
                                                         "int8 or uint8)");
    gp::Pool3 q;
    const Shape expect = to_pool3(node_, x.shape, q);
    KILNRT_CHECK(l.outputs.at(0).shape == expect, kInternal, name_,
                 "output shape " << shape_to_string(l.outputs[0].shape) << ", expected " << shape_to_string(expect));
    int64_t* indices = nullptr;
    if (l.outputs.size() > 1 && l.outputs[1].present) {
      KILNRT_CHECK(l.outputs[1].dtype == DType::kInt64 && l.outputs[1].shape == expect, kInternal, name_,
                   "Indices must be int64 of the output's shape");
      indices = static_cast<int64_t*>(l.outputs[1].data);
    }
    check_launch(gp::max_pool3(dt, x.data, l.outputs[0].data, indices, column_major_, q, l.stream), name_,
                 "max_pool3");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool column_major_;
};

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

// ---- entry points (layers_misc_gaps.h) ----------------------------------------------------------------------------
bool batch_norm_needs_general(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 5) return false;  // the main layer reports it
  for (size_t i = 1; i < 5; ++i)
    if (n.inputs[i].empty() || !g.is_constant(n.inputs[i]) || value_dtype(g, n.inputs[i]) != DType::kFloat32)
      return true;
  if (n.attr_int("training_mode", 0) != 0) return true;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return true;
  return false;
}

std::string batch_norm_general_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() < 5) return "needs scale, B, mean and var";
  for (size_t i = 0; i < 5; ++i) {
    if (n.inputs[i].empty()) return "input " + std::to_string(i) + " is omitted";
    const DType t = value_dtype(g, n.inputs[i]);
    if (t != DType::kFloat32) return std::string("dtype ") + dtype_name(t) + " (this CUDA BatchNormalization takes float32)";
  }
  if (n.attr_int("spatial", 1) != 1) return "spatial=0";
  const bool training = n.attr_int("training_mode", 0) != 0;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && (!training || i > 2)) return "saved statistics outputs (before opset 14)";
  return "";
}

std::unique_ptr<CudaLayer> make_batch_norm_general(const LayerCreateArgs& a) {
  return std::make_unique<BatchNormGeneralLayer>(a.node);
}

bool max_pool_needs_general(const ir::Node& n, const ir::Graph& g) {
  if (n.op_type != "MaxPool") return false;
  return present(n, 1) || dtype_is_one_of(value_dtype(g, n.inputs.at(0)), {DType::kInt8, DType::kUInt8});
}

std::string max_pool_general_supports(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  if (pool_dtype_code(t) < 0)
    return std::string("dtype ") + dtype_name(t) + " (MaxPool with Indices / on 8-bit takes float32, int8, uint8)";
  const ir::TensorType* tt = g.type_of(n.inputs.at(0));
  if (tt && tt->has_shape && (tt->shape.size() < 3 || tt->shape.size() > 5)) return "only 1-D to 3-D pooling";
  const int64_t order = n.attr_int("storage_order", 0);
  if (order != 0 && order != 1) return "storage_order must be 0 or 1";
  if (!n.has_attr("kernel_shape")) return "kernel_shape is required";
  return "";
}

std::unique_ptr<CudaLayer> make_max_pool_general(const LayerCreateArgs& a) {
  return std::make_unique<MaxPoolGeneralLayer>(a.node);
}

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
