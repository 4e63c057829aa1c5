// CUDA layer of TopK: float32, int32, int64, uint64 (k read on the host: a constant or a shape computation; an
// omitted output is written into the workspace). Kernels: topk.cu, topk_int.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/reduce/topk/cuda/topk_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

class TopKLayer final : public CudaLayer {
 public:
  TopKLayer(const ir::Node& n, int64_t opset)
      : node_(n), name_(n.describe()), opset_(opset), largest_(n.attr_int("largest", 1) != 0) {}
  std::string tactic() const override { return "kernel:topk-rank"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", -1), xs.size(), node_));
    int64_t outer, n, inner;
    split3(xs, axis, &outer, &n, &inner);
    const int64_t kk = l.outputs[0].shape[axis];  // inference applied k (checked against the axis there)
    KILNRT_CHECK(kk >= 0 && kk <= n, kInvalidArgument, name_, "k = " << kk << " for an axis of " << n);
    const DType xt = l.inputs[0].dtype;  // float32, or int32 / int64 / uint64 (k::topk_int)
    const size_t es = dtype_size(xt);
    void* values = l.outputs[0].data;
    int64_t* indices = l.outputs.size() > 1 ? static_cast<int64_t*>(l.outputs[1].data) : nullptr;
    const bool need_scratch =
        !values || !indices || !l.outputs[0].present || l.outputs.size() < 2 || !l.outputs[1].present;
    if (need_scratch) {  // an omitted output: write it into the workspace
      const size_t bytes = static_cast<size_t>(outer * kk * inner) * (es + sizeof(int64_t));
      KILNRT_CHECK(bytes <= l.workspace_bytes, kUnsupported, name_, "TopK scratch exceeds the CUDA workspace");
      char* ws = static_cast<char*>(l.workspace);
      if (!l.outputs[0].present || !values) values = ws + outer * kk * inner * sizeof(int64_t);
      if (l.outputs.size() < 2 || !l.outputs[1].present || !indices) indices = reinterpret_cast<int64_t*>(ws);
    }
    if (xt != DType::kFloat32) {
      const int code = xt == DType::kInt64 ? 1 : xt == DType::kInt32 ? 2 : 11;
      check_launch(k::topk_int(code, l.inputs[0].data, values, indices, outer, n, inner, kk, largest_, l.stream), name_,
                   "topk");
      return;
    }
    check_launch(k::topk_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(values), indices, outer,
                             n, inner, kk, largest_, l.stream),
                 name_, "topk");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
  bool largest_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"TopK"},
    [](const ir::Node& n, const ir::Graph& g) {
      return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt64});
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      return std::make_unique<TopKLayer>(a.node, a.opset);
    });

}  // namespace
}  // namespace kilnrt::backends::cuda
