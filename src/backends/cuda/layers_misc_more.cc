// CUDA layers for CPU parity: MeanVarianceNormalization, OneHot (depth a host value), MaxUnpool
// (output_shape a host value when given) and RoiAlign, all float32 data (16-bit engines run them as float32
// islands). Kernels: kernels/misc_more.cu.
#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/more_kernels.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels::more;
using kilnrt::cuda::kernels::kMaxDims;

m::DimsMask dims_of(const Shape& s, const ir::Node& node) {
  KILNRT_CHECK(static_cast<int>(s.size()) <= kMaxDims, kUnsupported, node.describe(),
               "rank " << s.size() << " exceeds the CUDA layer's " << kMaxDims);
  m::DimsMask d;
  d.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) d.d[i] = s[i];
  return d;
}

class MvnLayer final : public CudaLayer {
 public:
  explicit MvnLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axes_(n.attr_ints("axes", std::vector<int64_t>{0, 2, 3})) {}
  std::string tactic() const override { return "kernel:mvn"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    m::DimsMask d = dims_of(s, node_);
    for (int64_t a : axes_) d.flag[ops::normalize_axis(a, static_cast<int64_t>(s.size()), node_)] = 1;
    int64_t groups = 1, count = 1;
    for (int i = 0; i < d.rank; ++i) (d.flag[i] ? count : groups) *= d.d[i];
    check_launch(m::mvn_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), d,
                            groups, count, l.stream),
                 name_, "mvn");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  std::vector<int64_t> axes_;
};

class OneHotLayer final : public CudaLayer {
 public:
  explicit OneHotLayer(const ir::Node& n) : node_(n), name_(n.describe()), axis_(n.attr_int("axis", -1)) {}
  std::string tactic() const override { return "kernel:onehot"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    KILNRT_CHECK(l.inputs[2].numel() == 2, kInvalidArgument, name_,
                 "values must hold 2 elements [off, on], got " << l.inputs[2].numel());
    const Shape& is = l.inputs[0].shape;
    const int64_t rank = static_cast<int64_t>(is.size()) + 1;
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    const int64_t depth = l.outputs[0].shape[static_cast<size_t>(axis)];
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= is[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis); d < is.size(); ++d) inner *= is[d];
    const DType it = l.inputs[0].dtype;
    const int code = it == DType::kInt64 ? 0 : it == DType::kInt32 ? 1 : 2;
    check_launch(m::onehot(l.inputs[0].data, code, l.inputs[2].data, l.outputs[0].data, outer, depth, inner,
                           dtype_size(l.outputs[0].dtype), l.stream),
                 name_, "onehot");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t axis_;
};

class MaxUnpoolLayer final : public CudaLayer {
 public:
  explicit MaxUnpoolLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:maxunpool"; }
  std::vector<int> host_inputs() const override { return {2}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 3, kInvalidArgument, name_, "X must be [N, C, spatial...]");
    KILNRT_CHECK(l.inputs[1].shape == xs, kInvalidArgument, name_,
                 "I " << shape_to_string(l.inputs[1].shape) << " differs from X " << shape_to_string(xs));
    // The default unpooled shape (indices are flat positions there), as the CPU reference computes it.
    const size_t nd = xs.size() - 2;
    const std::vector<int64_t> k = node_.attr_ints("kernel_shape");
    const std::vector<int64_t> s = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> p = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    KILNRT_CHECK(k.size() == nd && s.size() == nd && p.size() == 2 * nd, kInvalidModel, name_,
                 "kernel_shape/strides/pads do not match the input rank");
    Shape dflt = xs;
    for (size_t i = 0; i < nd; ++i) dflt[2 + i] = (xs[2 + i] - 1) * s[i] + k[i] - p[i] - p[nd + i];
    const Shape& out = l.outputs[0].shape;
    KILNRT_CHECK(out.size() == dflt.size(), kInvalidArgument, name_, "output_shape has the wrong rank");
    for (size_t i = 0; i < out.size(); ++i)
      KILNRT_CHECK(out[i] >= dflt[i], kInvalidArgument, name_,
                   "output_shape " << shape_to_string(out) << " is smaller than the unpooled shape "
                                   << shape_to_string(dflt));
    check_launch(m::maxunpool_f32(static_cast<const float*>(l.inputs[0].data),
                                  static_cast<const int64_t*>(l.inputs[1].data), l.inputs[0].numel(),
                                  static_cast<float*>(l.outputs[0].data), dims_of(dflt, node_), dims_of(out, node_),
                                  l.stream),
                 name_, "maxunpool");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

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
    check_launch(m::roi_align_f32(static_cast<const float*>(l.inputs[0].data),
                                  static_cast<const float*>(l.inputs[1].data),
                                  static_cast<const int64_t*>(l.inputs[2].data), static_cast<float*>(l.outputs[0].data),
                                  p, l.stream),
                 name_, "roi_align");
  }

 private:
  std::string name_;
  m::RoiAlignParams p_;
};

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    r.add({"MeanVarianceNormalization",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA layer takes float32";
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<MvnLayer>(a.node); }});
    r.add({"OneHot",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (!dtype_is_one_of(value_dtype(g, n.inputs.at(0)), {DType::kInt64, DType::kInt32, DType::kFloat32}))
               return "indices must be int64 / int32 / float32";
             const size_t sz = dtype_size(value_dtype(g, n.inputs.at(2)));
             return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown values dtype";
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<OneHotLayer>(a.node);
           }});
    r.add({"MaxUnpool",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA layer takes float32";
             return value_dtype(g, n.inputs.at(1)) == DType::kInt64 ? "" : "indices must be int64";
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<MaxUnpoolLayer>(a.node);
           }});
    r.add({"RoiAlign",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32 || value_dtype(g, n.inputs.at(1)) != DType::kFloat32)
               return "the CUDA layer takes float32 X and rois";
             return value_dtype(g, n.inputs.at(2)) == DType::kInt64 ? "" : "batch_indices must be int64";
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<RoiAlignLayer>(a.node, a.opset);
           }});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
