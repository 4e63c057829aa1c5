// MaxPool with the Indices output or on 8-bit integers (max_pool_indices_layer.h), 1-D to 3-D: one kernel
// (max_pool_indices.cu) with the arithmetic of the CPU reference (ops/nn/pool/pool.cc).
#include "ops/nn/pool/cuda/max_pool_indices_layer.h"

#include "ops/nn/pool/cuda/max_pool_indices_kernels.h"
#include "ops/nn/pool/cuda/pool3_geometry.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gp = kilnrt::cuda::kernels::maxpool;

bool present(const ir::Node& n, size_t i) { return i < n.outputs.size() && !n.outputs[i].empty(); }

int pool_dtype_code(DType t) { return t == DType::kFloat32 ? 0 : t == DType::kInt8 ? 1 : t == DType::kUInt8 ? 2 : -1; }

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
    KILNRT_CHECK(dt >= 0, kUnsupported, name_,
                 "dtype " << dtype_name(x.dtype)
                          << " (this CUDA MaxPool takes float32, "
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
    check_launch(gp::max_pool3(dt, x.data, l.outputs[0].data, indices, column_major_, q, l.stream), name_, "max_pool3");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool column_major_;
};

}  // namespace

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

}  // namespace kilnrt::backends::cuda
