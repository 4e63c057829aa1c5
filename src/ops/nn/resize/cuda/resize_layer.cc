// The CUDA layer of Resize / Upsample: float32, nearest / linear / cubic, every coordinate mode; scales / sizes /
// roi read on the host. antialias=1 (linear / cubic) runs the antialiasing kernel.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/resize/cuda/resize_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::vector<double> host_doubles(const Tensor& t, const std::string& name) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kFloat32)
      v[i] = t.data<float>()[i];
    else if (t.dtype() == DType::kFloat64)
      v[i] = t.data<double>()[i];
    else
      KILNRT_THROW(kUnsupported, name, "Resize: scales / roi of dtype " << dtype_name(t.dtype()));
  }
  return v;
}

int index_of(const std::string& v, std::initializer_list<const char*> names) {
  int i = 0;
  for (const char* n : names) {
    if (v == n) return i;
    ++i;
  }
  return -1;
}

class ResizeLayer final : public CudaLayer {
 public:
  ResizeLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {
    std::string mode = n.attr_string("mode", std::string("nearest"));
    if (mode == "bilinear" || mode == "trilinear") mode = "linear";
    plan_.mode = index_of(mode, {"nearest", "linear", "cubic"});
    legacy_ = n.op_type == "Upsample" || opset < 11;
    if (legacy_) {
      plan_.coord = 4;
      plan_.nearest = 2;
    } else {
      plan_.coord = index_of(n.attr_string("coordinate_transformation_mode", std::string("half_pixel")),
                             {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                              "tf_half_pixel_for_nearest", "tf_crop_and_resize"});
      plan_.nearest = index_of(n.attr_string("nearest_mode", std::string("round_prefer_floor")),
                               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
      plan_.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
      plan_.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
      plan_.extrapolation = n.attr_float("extrapolation_value", 0.f);
    }
    if (opset >= 18 && n.op_type == "Resize") {
      antialias_ = n.attr_int("antialias", 0) != 0;
      keep_ = n.attr_string("keep_aspect_ratio_policy", std::string("stretch"));
      axes_ = n.attr_ints("axes", std::vector<int64_t>{});
    }
  }
  std::string tactic() const override { return "kernel:resize"; }
  std::vector<int> host_inputs() const override { return {1, 2, 3}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& in = l.inputs[0].shape;
    const Shape& out = l.outputs[0].shape;
    KILNRT_CHECK(in.size() <= static_cast<size_t>(k::kMaxDims) && in.size() == out.size(), kUnsupported, name_,
                 "rank " << in.size());
    const int rank = static_cast<int>(in.size());
    k::ResizePlan p = plan_;
    p.rank = rank;
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    for (auto& a : axes) a = ops::normalize_axis(a, rank, node_);
    for (int d = 0; d < rank; ++d) {
      KILNRT_CHECK(in[d] > 0 || out[d] == 0, kInvalidArgument, name_, "cannot resize an empty axis");
      p.ax[d].in = in[d];
      p.ax[d].out = out[d];
    }
    auto host = [&](int pos) -> const Tensor* {
      return pos >= 0 && pos < static_cast<int>(l.inputs.size()) && l.inputs[pos].present && l.inputs[pos].host &&
                     l.inputs[pos].host->numel() > 0
                 ? l.inputs[pos].host
                 : nullptr;
    };
    const int roi_pos = legacy_ ? -1 : 1, scales_pos = legacy_ ? 1 : 2, sizes_pos = legacy_ ? -1 : 3;
    std::vector<double> scales;
    if (node_.op_type == "Upsample" && opset_ < 9) {
      for (float f : node_.attr_floats("scales")) scales.push_back(f);
    } else if (const Tensor* t = host(scales_pos)) {
      scales = host_doubles(*t, name_);
    }
    if (!scales.empty()) {
      KILNRT_CHECK(scales.size() == axes.size(), kInvalidArgument, name_, "scales / axes sizes differ");
      for (size_t i = 0; i < axes.size(); ++i) p.ax[axes[i]].scale = static_cast<float>(scales[i]);
    } else {
      const Tensor* sz = host(sizes_pos);
      KILNRT_CHECK(sz, kInvalidModel, name_, "exactly one of 'scales' and 'sizes' must be given (non-empty)");
      const std::vector<int64_t> sizes = ops::tensor_to_int64s(*sz);
      KILNRT_CHECK(sizes.size() == axes.size(), kInvalidArgument, name_, "sizes / axes sizes differ");
      if (keep_ != "stretch") {
        double s = keep_ == "not_larger" ? 1e300 : 0.0;
        for (size_t i = 0; i < axes.size(); ++i) {
          const double r = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
          s = keep_ == "not_larger" ? std::min(s, r) : std::max(s, r);
        }
        for (int64_t a : axes) p.ax[a].scale = s;
      } else {
        for (size_t i = 0; i < axes.size(); ++i)
          p.ax[axes[i]].scale =
              in[axes[i]] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]) : 1.0;
      }
    }
    if (p.coord == 6) {
      const Tensor* roi = host(roi_pos);
      KILNRT_CHECK(roi, kInvalidModel, name_, "tf_crop_and_resize needs the roi input");
      const std::vector<double> r = host_doubles(*roi, name_);
      KILNRT_CHECK(r.size() == 2 * axes.size(), kInvalidArgument, name_, "roi needs 2 values per axis");
      for (size_t i = 0; i < axes.size(); ++i) {
        p.ax[axes[i]].roi_start = r[i];
        p.ax[axes[i]].roi_end = r[i + axes.size()];
      }
    }
    if (antialias_) {  // linear / cubic, antialias=1: resize_antialias.cu
      check_launch(k::resize_antialias_f32(static_cast<const float*>(l.inputs[0].data),
                                           static_cast<float*>(l.outputs[0].data), p, l.stream),
                   name_, "resize_antialias");
      return;
    }
    check_launch(
        k::resize_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), p, l.stream),
        name_, "resize");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
  bool legacy_ = false;
  bool antialias_ = false;
  k::ResizePlan plan_;
  std::string keep_ = "stretch";
  std::vector<int64_t> axes_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Resize", "Upsample"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA Resize takes float32";
      std::string mode = n.attr_string("mode", std::string("nearest"));
      if (n.attr_int("antialias", 0) != 0 && mode != "linear" && mode != "cubic")  // resize_antialias.cu
        return "antialias=1 with mode " + mode;
      if (index_of(mode, {"nearest", "linear", "cubic", "bilinear", "trilinear"}) < 0) return "mode " + mode;
      if (index_of(n.attr_string("coordinate_transformation_mode", std::string("half_pixel")),
                   {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nearest", "tf_crop_and_resize"}) < 0 ||
          index_of(n.attr_string("nearest_mode", std::string("round_prefer_floor")),
                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) < 0)
        return "unknown coordinate_transformation_mode / nearest_mode";
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      return std::make_unique<ResizeLayer>(a.node, a.opset);
    });

}  // namespace
}  // namespace kilnrt::backends::cuda
