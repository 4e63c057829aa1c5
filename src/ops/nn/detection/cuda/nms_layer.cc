// The CUDA layer of NonMaxSuppression: a data-dependent layer (data_dependent_layer.h) that selects the boxes of
// each (batch, class) on the device (nms.cu), reads the counts on the host once (the plan's sync point), then writes
// selected_indices at its exact size into upper-bound storage. Scratch lives in the context workspace: inputs too
// large for it are a clear error naming the node.
#include <algorithm>

#include "ops/cuda/data_dependent_layer.h"
#include "ops/nn/detection/cuda/nms_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace un = kilnrt::cuda::kernels::un;

class NmsLayer final : public DataDependentLayer {
 public:
  explicit NmsLayer(const ir::Node& n) : name_(n.describe()), center_(n.attr_int("center_point_box", 0) != 0) {}
  std::string tactic() const override { return "kernel:nms-greedy"; }
  std::vector<int> host_inputs() const override { return {2, 3, 4}; }
  // Boxes kept per (batch, class): max_output_boxes_per_class, at most N.
  static int64_t keep_of(const std::vector<LayerTensor>& in, int64_t N) {
    int64_t max_out = 0;
    if (in.size() > 2 && in[2].present && in[2].host && in[2].host->numel() > 0) {
      const Tensor& t = *in[2].host;
      max_out = t.dtype() == DType::kInt32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
    }
    return std::clamp<int64_t>(max_out, 0, N);
  }
  static double scalar(const LayerTensor& t) {
    return t.host->dtype() == DType::kFloat64 ? t.host->data<double>()[0] : t.host->data<float>()[0];
  }
  void dims(const std::vector<LayerTensor>& in, int64_t* B, int64_t* C, int64_t* N) const {
    const Shape& b = in.at(0).shape;
    const Shape& s = in.at(1).shape;
    KILNRT_CHECK(
        b.size() == 3 && b[2] == 4 && s.size() == 3 && s[0] == b[0] && s[2] == b[1], kInvalidArgument, name_,
        "boxes must be [B, N, 4] and scores [B, C, N], got " << shape_to_string(b) << " and " << shape_to_string(s));
    *B = b[0];
    *N = b[1];
    *C = s[1];
  }
  std::vector<Shape> max_output_shapes(const std::vector<LayerTensor>& in) const override {
    int64_t B, C, N;
    dims(in, &B, &C, &N);
    return {Shape{B * C * keep_of(in, N), 3}};
  }
  std::vector<DType> output_dtypes(const std::vector<LayerTensor>&) const override { return {DType::kInt64}; }
  void enqueue(LayerLaunch& l) override {
    int64_t B, C, N;
    dims(l.inputs, &B, &C, &N);
    const int64_t keep = keep_of(l.inputs, N);
    LayerOutput& y = l.outputs.at(0);
    y.shape = Shape{0, 3};
    if (keep == 0 || B * C == 0) return;
    double iou_th = 0, score_th = 0;
    bool has_score_th = false;
    if (l.inputs.size() > 3 && l.inputs[3].present && l.inputs[3].host && l.inputs[3].host->numel() > 0)
      iou_th = scalar(l.inputs[3]);
    if (l.inputs.size() > 4 && l.inputs[4].present && l.inputs[4].host && l.inputs[4].host->numel() > 0) {
      has_score_th = true;
      score_th = scalar(l.inputs[4]);
    }
    const int64_t pairs = B * C;
    // Workspace: counts (pairs) | selected (pairs * keep) | order (pairs * N) int64 | suppressed (pairs * N bytes).
    const size_t need = size_t(pairs) * (1 + keep + N) * sizeof(int64_t) + size_t(pairs) * N;
    KILNRT_CHECK(need <= l.workspace_bytes, kUnsupported, name_,
                 "NonMaxSuppression of " << pairs << " (batch, class) pairs over " << N << " boxes needs " << need
                                         << " bytes of scratch, more than the context's " << l.workspace_bytes
                                         << "-byte workspace");
    auto* counts = static_cast<int64_t*>(l.workspace);
    int64_t* selected = counts + pairs;
    int64_t* order = selected + pairs * keep;
    auto* suppressed = reinterpret_cast<uint8_t*>(order + pairs * N);
    check_launch(
        un::nms_select(static_cast<const float*>(l.inputs[0].data), static_cast<const float*>(l.inputs[1].data), B, C,
                       N, center_, keep, iou_th, has_score_th, score_th, order, suppressed, selected, counts, l.stream),
        name_, "nms_select");
    std::vector<int64_t> host_counts(pairs, 0);
    check_launch(un::copy_counts(counts, pairs, host_counts.data(), l.stream), name_, "copy_counts");
    int64_t total = 0;
    for (int64_t c : host_counts) {
      KILNRT_CHECK(c >= 0 && c <= keep, kInternal, name_, "device count " << c << " out of range");
      total += c;
    }
    y.shape = Shape{total, 3};
    check_launch(un::nms_compact(selected, counts, B, C, keep, static_cast<int64_t*>(y.data), l.stream), name_,
                 "nms_compact");
  }

 private:
  std::string name_;
  bool center_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"NonMaxSuppression"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      for (size_t i = 0; i < 2 && i < n.inputs.size(); ++i) {
        const DType t = value_dtype(g, n.inputs[i]);
        if (t != DType::kUndefined && t != DType::kFloat32) return "dtype " + std::string(dtype_name(t));
      }
      return n.inputs.size() < 2 ? "needs boxes and scores" : "";
    },
    [](const LayerCreateArgs& a) { return std::unique_ptr<CudaLayer>(new NmsLayer(a.node)); });

}  // namespace
}  // namespace kilnrt::backends::cuda
