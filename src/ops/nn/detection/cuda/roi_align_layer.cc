// CUDA layer of RoiAlign (float32 X and rois, int64 batch indices; 16-bit engines run it as a float32 island),
// avg / max mode, half_pixel or output_half_pixel coordinates by opset. Kernel: roi_align.cu.
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/detection/cuda/roi_align_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels;

class RoiAlignLayer final : public CudaLayer {
 public:
  RoiAlignLayer(const ir::Node& n, int64_t opset) : name_(n.describe()) {
    p_.oh = n.attr_int("output_height", 1);
    p_.ow = n.attr_int("output_width", 1);
    p_.sampling_ratio = n.attr_int("sampling_ratio", 0);
    p_.spatial_scale = n.attr_float("spatial_scale", 1.f);
    const std::string mode = n.attr_string("mode", "avg");
    KILNRT_CHECK(mode == "avg" || mode == "max", kInvalidModel, name_, "mode '" << mode << "' (avg or max)");
    p_.max_mode = mode == "max";
    const std::string ctm =
        opset >= 16 ? n.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
    p_.half_pixel = ctm == "half_pixel";
  }
  std::string tactic() const override { return "kernel:roi-align"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() == 4, kInvalidArgument, name_, "X must be [N, C, H, W]");
    const int64_t r = l.inputs[2].numel();
    KILNRT_CHECK(l.inputs[1].numel() == r * 4, kInvalidArgument, name_,
                 "rois must be [num_rois, 4] for " << r << " batch indices");
    m::RoiAlignParams p = p_;
    p.n = xs[0];
    p.c = xs[1];
    p.h = xs[2];
    p.w = xs[3];
    p.r = r;
    check_launch(
        m::roi_align_f32(static_cast<const float*>(l.inputs[0].data), static_cast<const float*>(l.inputs[1].data),
                         static_cast<const int64_t*>(l.inputs[2].data), static_cast<float*>(l.outputs[0].data), p,
                         l.stream),
        name_, "roi_align");
  }

 private:
  std::string name_;
  m::RoiAlignParams p_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"RoiAlign"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32 || value_dtype(g, n.inputs.at(1)) != DType::kFloat32)
        return "the CUDA layer takes float32 X and rois";
      return value_dtype(g, n.inputs.at(2)) == DType::kInt64 ? "" : "batch_indices must be int64";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      return std::make_unique<RoiAlignLayer>(a.node, a.opset);
    });

}  // namespace
}  // namespace kilnrt::backends::cuda
