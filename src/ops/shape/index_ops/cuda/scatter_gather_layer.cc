// CUDA layers of ScatterElements (and the legacy Scatter), ScatterND (float32 / int64 data, reductions none, add,
// mul, max, min) and GatherND (any 1-, 2-, 4- or 8-byte dtype). Kernels: scatter_gather.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/index_ops/cuda/scatter_gather_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

int reduction_code(const ir::Node& n) {
  const std::string r = n.attr_string("reduction", std::string("none"));
  if (r == "add") return 1;
  if (r == "mul") return 2;
  if (r == "max") return 3;
  if (r == "min") return 4;
  return 0;
}

class ScatterElementsLayer final : public CudaLayer {
 public:
  explicit ScatterElementsLayer(const ir::Node& n) : node_(n), name_(n.describe()), red_(reduction_code(n)) {}
  std::string tactic() const override { return "kernel:scatter-elements"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& d = l.inputs[0];
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), d.shape.size(), node_));
    device_copy(l.outputs[0].data, d.data, d.numel(), dtype_size(d.dtype), l.stream, name_);
    check_launch(
        k::scatter_elements(l.outputs[0].data, to_dims(d.shape, name_), l.inputs[1].data,
                            l.inputs[1].dtype == DType::kInt64, l.inputs[2].data, to_dims(l.inputs[2].shape, name_),
                            axis, red_, d.dtype == DType::kFloat32 ? 0 : 1, l.stream),
        name_, "scatter_elements");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int red_;
};

class ScatterNDLayer final : public CudaLayer {
 public:
  explicit ScatterNDLayer(const ir::Node& n) : name_(n.describe()), red_(reduction_code(n)) {}
  std::string tactic() const override { return "kernel:scatter-nd"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& d = l.inputs[0];
    const Shape& is = l.inputs[1].shape;
    KILNRT_CHECK(!is.empty(), kInvalidArgument, name_, "indices must have rank >= 1");
    const int kk = static_cast<int>(is.back());
    KILNRT_CHECK(kk >= 0 && kk <= static_cast<int>(d.shape.size()), kInvalidArgument, name_,
                 "index tuples of length " << kk << " for data of rank " << d.shape.size());
    int64_t slice = 1;
    for (size_t i = kk; i < d.shape.size(); ++i) slice *= d.shape[i];
    const int64_t n_upd = kk > 0 ? l.inputs[1].numel() / kk : 0;
    device_copy(l.outputs[0].data, d.data, d.numel(), dtype_size(d.dtype), l.stream, name_);
    check_launch(
        k::scatter_nd(l.outputs[0].data, to_dims(d.shape, name_), static_cast<const int64_t*>(l.inputs[1].data), n_upd,
                      kk, l.inputs[2].data, slice, red_, d.dtype == DType::kFloat32 ? 0 : 1, l.stream),
        name_, "scatter_nd");
  }

 private:
  std::string name_;
  int red_;
};

class GatherNDLayer final : public CudaLayer {
 public:
  explicit GatherNDLayer(const ir::Node& n)
      : name_(n.describe()), batch_dims_(static_cast<int>(n.attr_int("batch_dims", 0))) {}
  std::string tactic() const override { return "kernel:gather-nd"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ds = l.inputs[0].shape;
    const Shape& is = l.inputs[1].shape;
    KILNRT_CHECK(!is.empty() && batch_dims_ >= 0 && batch_dims_ < static_cast<int>(is.size()), kInvalidArgument, name_,
                 "indices rank / batch_dims");
    const int kk = static_cast<int>(is.back());
    KILNRT_CHECK(kk >= 1 && batch_dims_ + kk <= static_cast<int>(ds.size()), kInvalidArgument, name_,
                 "index tuples of length " << kk << " for data of rank " << ds.size());
    int64_t slice = 1, n_batch = 1;
    for (size_t i = batch_dims_ + kk; i < ds.size(); ++i) slice *= ds[i];
    for (int i = 0; i < batch_dims_; ++i) n_batch *= is[i];
    check_launch(k::gather_nd(l.inputs[0].data, to_dims(ds, name_), static_cast<const int64_t*>(l.inputs[1].data),
                              l.inputs[1].numel() / kk, kk, batch_dims_, n_batch, slice, l.outputs[0].data,
                              dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather_nd");
  }

 private:
  std::string name_;
  int batch_dims_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"ScatterElements", "Scatter"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
      if (std::string e = dtype_in(n, g, 2, {DType::kFloat32, DType::kInt64}); !e.empty()) return e;
      return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt64});
    },
    factory<ScatterElementsLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"ScatterND"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
      if (std::string e = dtype_in(n, g, 2, {DType::kFloat32, DType::kInt64}); !e.empty()) return e;
      return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt64});
    },
    factory<ScatterNDLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"GatherND"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
      return sized(n, g);
    },
    factory<GatherNDLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
