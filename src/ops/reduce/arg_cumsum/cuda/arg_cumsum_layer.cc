// CUDA layers of ArgMax / ArgMin (float32) and CumSum (float32, float64, int32, int64; the axis read on the
// device). Kernels: arg_cumsum.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/reduce/arg_cumsum/cuda/arg_cumsum_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class ArgLayer final : public CudaLayer {
 public:
  explicit ArgLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), is_max_(n.op_type == "ArgMax"), last_(n.attr_int("select_last_index", 0) != 0) {}
  std::string tactic() const override { return "kernel:arg-reduce"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t outer, r, inner;
    split3(xs, axis, &outer, &r, &inner);
    KILNRT_CHECK(r > 0 || outer * inner == 0, kInvalidArgument, name_, "reduction over an empty axis");
    check_launch(k::arg_reduce_f32(static_cast<const float*>(l.inputs[0].data),
                                   static_cast<int64_t*>(l.outputs[0].data), outer, r, inner, is_max_, last_, l.stream),
                 name_, "arg_reduce");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool is_max_, last_;
};

int cumsum_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kFloat64: return 6;
    default: return -1;
  }
}

class CumSumLayer final : public CudaLayer {
 public:
  explicit CumSumLayer(const ir::Node& n)
      : name_(n.describe()), exclusive_(n.attr_int("exclusive", 0) != 0), reverse_(n.attr_int("reverse", 0) != 0) {}
  std::string tactic() const override { return "kernel:cumsum"; }
  void enqueue(LayerLaunch& l) override {
    // The axis stays on the device: the kernel reads it (no host read, graph-capture safe).
    check_launch(
        k::cumsum(l.inputs[0].data, l.outputs[0].data, l.inputs[1].data, l.inputs[1].dtype == DType::kInt64,
                  to_dims(l.inputs[0].shape, name_), exclusive_, reverse_, cumsum_code(l.inputs[0].dtype), l.stream),
        name_, "cumsum");
  }

 private:
  std::string name_;
  bool exclusive_, reverse_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"ArgMax", "ArgMin"}, [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); },
    factory<ArgLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"CumSum"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
      return dtype_in(n, g, 0, {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32});
    },
    factory<CumSumLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
