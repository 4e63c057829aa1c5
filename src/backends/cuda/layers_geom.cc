// CUDA layers for the geometry ops of the onnx 1.23 node cases: LpPool, CenterCropPad, Col2Im (N-D),
// AffineGrid (2-D / 3-D), DeformConv (2-D: offsets, mask, groups, offset groups) and TensorScatter. Kernels:
// kernels/geom.cu, one thread per output element, following the CPU references' arithmetic. The numeric ones take
// float32 (16-bit engines run them as float32 islands); CenterCropPad and TensorScatter move elements of any size, so
// they run 16-bit storage natively. Shape inputs (CenterCropPad's shape, Col2Im's image / block shapes, AffineGrid's
// size) are read on the host: constants or shape computations, else sync points.
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/geom.h"
#include "backends/cuda/pool3_geometry.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

const Tensor& host_value(const LayerLaunch& l, size_t i, const std::string& node, const char* what) {
  KILNRT_CHECK(i < l.inputs.size() && l.inputs[i].present && l.inputs[i].host != nullptr, kInternal, node,
               what << "'s host value is missing");
  return *l.inputs[i].host;
}

void expect_output(const LayerOutput& y, const Shape& want, const std::string& node) {
  KILNRT_CHECK(y.shape == want, kInternal, node,
               "output shape " << shape_to_string(y.shape) << ", expected " << shape_to_string(want));
}

// ---- LpPool ----------------------------------------------------------------------------------------------------------
class LpPoolLayer final : public CudaLayer {
 public:
  explicit LpPoolLayer(const ir::Node& n) : node_(n), name_(n.describe()), p_(n.attr_int("p", 2)) {}
  std::string tactic() const override { return "kernel:lppool"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const int nd = static_cast<int>(x.shape.size()) - 2;
    KILNRT_CHECK(nd >= 1 && nd <= 3, kUnsupported, name_, "LpPool takes 1-D to 3-D inputs, got " << shape_to_string(x.shape));
    KILNRT_CHECK(p_ >= 1, kInvalidModel, name_, "p must be >= 1, got " << p_);
    gk::LpPool3 q;
    expect_output(l.outputs.at(0), to_pool3(node_, x.shape, q), name_);
    q.p = static_cast<double>(p_);
    check_launch(gk::lp_pool3(static_cast<const float*>(x.data), static_cast<float*>(l.outputs[0].data), q, l.stream),
                 name_, "lp_pool3");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t p_;
};

// ---- CenterCropPad ---------------------------------------------------------------------------------------------------
class CenterCropPadLayer final : public CudaLayer {
 public:
  explicit CenterCropPadLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), axes_(n.attr_ints("axes", std::vector<int64_t>{})) {}
  std::string tactic() const override { return "kernel:center-crop-pad"; }
  std::vector<int> host_inputs() const override { return {1}; }
  bool supports_16bit() const override { return true; }  // elements are moved, not computed
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const std::vector<int64_t> lengths = ops::tensor_to_int64s(host_value(l, 1, name_, "shape"));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILNRT_CHECK(rank >= 1 && rank <= gk::kMaxRank, kUnsupported, name_,
                 "rank " << rank << " (the CUDA layer takes 1 to " << gk::kMaxRank << ")");
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    KILNRT_CHECK(lengths.size() == axes.size(), kInvalidModel, name_,
                 "shape has " << lengths.size() << " values for " << axes.size() << " axes");
    Shape out = x.shape;
    for (size_t i = 0; i < axes.size(); ++i) {
      KILNRT_CHECK(lengths[i] >= 0, kInvalidModel, name_, "negative target length " << lengths[i]);
      out[static_cast<size_t>(ops::normalize_axis(axes[i], rank, node_))] = lengths[i];
    }
    expect_output(l.outputs.at(0), out, name_);
    KILNRT_CHECK(l.outputs[0].dtype == x.dtype, kInternal, name_, "output dtype differs from the input's");
    gk::CropPad c;
    c.rank = static_cast<int>(rank);
    for (int a = 0; a < c.rank; ++a) {
      c.in[a] = x.shape[a];
      c.out[a] = out[a];
      c.src0[a] = x.shape[a] > out[a] ? (x.shape[a] - out[a]) / 2 : 0;
      c.dst0[a] = out[a] > x.shape[a] ? (out[a] - x.shape[a]) / 2 : 0;
      c.len[a] = std::min(x.shape[a], out[a]);
    }
    check_launch(gk::center_crop_pad(x.data, l.outputs[0].data, dtype_size(x.dtype), c, l.stream), name_,
                 "center_crop_pad");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  std::vector<int64_t> axes_;
};

// ---- Col2Im ----------------------------------------------------------------------------------------------------------
class Col2ImLayer final : public CudaLayer {
 public:
  explicit Col2ImLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:col2im"; }
  std::vector<int> host_inputs() const override { return {1, 2}; }
  void enqueue(LayerLaunch& l) override {
    const std::vector<int64_t> image = ops::tensor_to_int64s(host_value(l, 1, name_, "image_shape"));
    const std::vector<int64_t> block = ops::tensor_to_int64s(host_value(l, 2, name_, "block_shape"));
    const size_t nd = image.size();
    KILNRT_CHECK(nd >= 1 && block.size() == nd, kInvalidModel, name_,
                 "image_shape and block_shape must have the same length >= 1 (got " << nd << " and " << block.size()
                                                                                   << ")");
    KILNRT_CHECK(nd <= static_cast<size_t>(gk::kMaxRank), kUnsupported, name_,
                 nd << " spatial dims (the CUDA layer takes up to " << gk::kMaxRank << ")");
    const std::vector<int64_t> dil = node_.attr_ints("dilations", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> strides = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    KILNRT_CHECK(dil.size() == nd && strides.size() == nd && pads.size() == 2 * nd, kInvalidModel, name_,
                 "dilations / strides need " << nd << " values and pads " << 2 * nd);
    gk::Col2ImGeom g;
    g.nd = static_cast<int>(nd);
    for (size_t d = 0; d < nd; ++d) {
      KILNRT_CHECK(block[d] > 0 && dil[d] > 0 && strides[d] > 0 && image[d] >= 0, kInvalidModel, name_,
                   "block_shape, dilations and strides must be positive");
      const int64_t n = (image[d] + pads[d] + pads[d + nd] - dil[d] * (block[d] - 1) - 1) / strides[d] + 1;
      KILNRT_CHECK(n >= 1, kInvalidModel, name_, "no block position fits along spatial dim " << d);
      g.image[d] = image[d];
      g.block[d] = block[d];
      g.blocks[d] = n;
      g.dil[d] = dil[d];
      g.stride[d] = strides[d];
      g.pad[d] = pads[d];
      g.k_size *= block[d];
      g.l_size *= n;
    }
    const Shape& s = l.inputs.at(0).shape;
    KILNRT_CHECK(s.size() == 3 && s[1] % g.k_size == 0 && s[2] == g.l_size, kInvalidModel, name_,
                 "input " << shape_to_string(s) << " must be [N, C * " << g.k_size << ", " << g.l_size << "]");
    g.batch = s[0];
    g.channels = s[1] / g.k_size;
    Shape want{g.batch, g.channels};
    want.insert(want.end(), image.begin(), image.end());
    expect_output(l.outputs.at(0), want, name_);
    check_launch(gk::col2im(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), g,
                            l.stream),
                 name_, "col2im");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

// ---- AffineGrid ------------------------------------------------------------------------------------------------------
class AffineGridLayer final : public CudaLayer {
 public:
  explicit AffineGridLayer(const ir::Node& n)
      : name_(n.describe()), align_corners_(n.attr_int("align_corners", 0) != 0) {}
  std::string tactic() const override { return "kernel:affine-grid"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const std::vector<int64_t> size = ops::tensor_to_int64s(host_value(l, 1, name_, "size"));
    KILNRT_CHECK(size.size() == 4 || size.size() == 5, kInvalidModel, name_,
                 "size must be [N, C, H, W] or [N, C, D, H, W], got " << size.size() << " values");
    gk::AffineGridGeom g;
    g.nd = static_cast<int>(size.size()) - 2;
    g.n = size[0];
    const int64_t nd = g.nd;
    const Shape& ts = l.inputs.at(0).shape;
    KILNRT_CHECK(ts == (Shape{g.n, nd, nd + 1}), kInvalidModel, name_,
                 "theta has shape " << shape_to_string(ts) << ", expected [" << g.n << ", " << nd << ", " << nd + 1
                                    << "]");
    for (size_t d = 2; d < size.size(); ++d) KILNRT_CHECK(size[d] >= 0, kInvalidModel, name_, "negative size " << size[d]);
    g.depth = nd == 3 ? size[2] : 1;
    g.height = size[nd == 3 ? 3 : 2];
    g.width = size[nd == 3 ? 4 : 3];
    g.align_corners = align_corners_;
    Shape want{g.n};
    if (nd == 3) want.push_back(g.depth);
    want.push_back(g.height);
    want.push_back(g.width);
    want.push_back(nd);
    expect_output(l.outputs.at(0), want, name_);
    check_launch(gk::affine_grid(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), g,
                                 l.stream),
                 name_, "affine_grid");
  }

 private:
  std::string name_;
  bool align_corners_;
};

// ---- DeformConv ------------------------------------------------------------------------------------------------------
class DeformConvLayer final : public CudaLayer {
 public:
  explicit DeformConvLayer(const ir::Node& n)
      : name_(n.describe()),
        group_(n.attr_int("group", 1)),
        og_(n.attr_int("offset_group", 1)),
        dil_(n.attr_ints("dilations", std::vector<int64_t>{1, 1})),
        st_(n.attr_ints("strides", std::vector<int64_t>{1, 1})),
        pads_(n.attr_ints("pads", std::vector<int64_t>{0, 0, 0, 0})) {
    KILNRT_CHECK(dil_.size() == 2 && st_.size() == 2 && pads_.size() == 4, kInvalidModel, name_,
                 "dilations / strides need 2 values and pads 4");
  }
  std::string tactic() const override { return "kernel:deform-conv2d"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const LayerTensor& w = l.inputs.at(1);
    const LayerTensor& off = l.inputs.at(2);
    KILNRT_CHECK(x.shape.size() == 4 && w.shape.size() == 4 && off.shape.size() == 4, kUnsupported, name_,
                 "DeformConv supports 2-D inputs: X [N, C, H, W], W [OC, C/group, kH, kW], offset [N, *, oH, oW]");
    gk::DeformConvArgs a;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.h = x.shape[2];
    a.w = x.shape[3];
    a.oc = w.shape[0];
    a.kh = w.shape[2];
    a.kw = w.shape[3];
    a.group = group_;
    a.offset_group = og_;
    KILNRT_CHECK(group_ > 0 && og_ > 0 && a.c == w.shape[1] * group_ && a.oc % group_ == 0 && a.c % og_ == 0,
                 kInvalidModel, name_,
                 "inconsistent channels: X " << shape_to_string(x.shape) << ", W " << shape_to_string(w.shape)
                                             << ", group " << group_ << ", offset_group " << og_);
    a.oh = off.shape[2];
    a.ow = off.shape[3];
    const int64_t exp_oh = (a.h + pads_[0] + pads_[2] - ((a.kh - 1) * dil_[0] + 1)) / st_[0] + 1;
    const int64_t exp_ow = (a.w + pads_[1] + pads_[3] - ((a.kw - 1) * dil_[1] + 1)) / st_[1] + 1;
    const int64_t taps = og_ * a.kh * a.kw;
    KILNRT_CHECK(off.shape[0] == a.n && off.shape[1] == taps * 2 && a.oh == exp_oh && a.ow == exp_ow, kInvalidModel,
                 name_,
                 "offset has shape " << shape_to_string(off.shape) << ", expected [" << a.n << ", " << taps * 2 << ", "
                                     << exp_oh << ", " << exp_ow << "]");
    if (l.inputs.size() > 3 && l.inputs[3].present) {
      KILNRT_CHECK(l.inputs[3].numel() == a.oc, kInvalidModel, name_, "B must have " << a.oc << " values");
      a.bias = static_cast<const float*>(l.inputs[3].data);
    }
    if (l.inputs.size() > 4 && l.inputs[4].present) {
      KILNRT_CHECK(l.inputs[4].shape == (Shape{a.n, taps, a.oh, a.ow}), kInvalidModel, name_,
                   "mask has shape " << shape_to_string(l.inputs[4].shape) << ", expected [" << a.n << ", " << taps
                                     << ", " << a.oh << ", " << a.ow << "]");
      a.mask = static_cast<const float*>(l.inputs[4].data);
    }
    expect_output(l.outputs.at(0), Shape{a.n, a.oc, a.oh, a.ow}, name_);
    a.x = static_cast<const float*>(x.data);
    a.weight = static_cast<const float*>(w.data);
    a.offset = static_cast<const float*>(off.data);
    a.y = static_cast<float*>(l.outputs[0].data);
    for (int i = 0; i < 2; ++i) {
      a.stride[i] = st_[i];
      a.dil[i] = dil_[i];
      a.pad[i] = pads_[i];
    }
    check_launch(gk::deform_conv2d(a, l.stream), name_, "deform_conv2d");
  }

 private:
  std::string name_;
  int64_t group_, og_;
  std::vector<int64_t> dil_, st_, pads_;
};

// ---- TensorScatter ---------------------------------------------------------------------------------------------------
// write_indices is read by the kernel on the device (no sync). The CPU reference refuses a linear-mode position past
// the cache; the kernel cannot raise, so such positions are not written — unless write_indices is a host value
// (constant / shape computation), which is checked here with the CPU reference's error.
class TensorScatterLayer final : public CudaLayer {
 public:
  explicit TensorScatterLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), mode_(n.attr_string("mode", "linear")), axis_(n.attr_int("axis", -2)) {
    KILNRT_CHECK(mode_ == "linear" || mode_ == "circular", kInvalidModel, name_,
                 "mode must be linear or circular, got '" << mode_ << "'");
  }
  std::string tactic() const override { return "kernel:tensor-scatter"; }
  bool supports_16bit() const override { return true; }  // elements are moved, not computed
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& cache = l.inputs.at(0);
    const LayerTensor& update = l.inputs.at(1);
    const Shape& cs = cache.shape;
    const Shape& us = update.shape;
    const int64_t rank = static_cast<int64_t>(cs.size());
    KILNRT_CHECK(update.dtype == cache.dtype && us.size() == cs.size() && rank >= 2, kInvalidModel, name_,
                 "update " << shape_to_string(us) << " must have past_cache's dtype and rank (>= 2)");
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    KILNRT_CHECK(axis >= 1, kInvalidModel, name_, "axis must not be the batch axis 0");
    for (int64_t d = 0; d < rank; ++d)
      KILNRT_CHECK(d == axis ? us[d] <= cs[d] : us[d] == cs[d], kInvalidModel, name_,
                   "update " << shape_to_string(us) << " does not fit past_cache " << shape_to_string(cs)
                             << " along axis " << axis);
    gk::ScatterGeom g;
    g.batch = cs[0];
    g.max_len = cs[axis];
    g.len = us[axis];
    g.circular = mode_ == "circular";
    for (int64_t d = 1; d < axis; ++d) g.prefix *= cs[d];
    for (int64_t d = axis + 1; d < rank; ++d) g.inner *= cs[d];
    const int64_t* idx = nullptr;
    if (l.inputs.size() > 2 && l.inputs[2].present) {
      const LayerTensor& wi = l.inputs[2];
      KILNRT_CHECK(wi.dtype == DType::kInt64 && wi.numel() == g.batch, kInvalidModel, name_,
                   "write_indices must be int64 with the batch size " << g.batch << " values, got "
                                                                      << dtype_name(wi.dtype) << " "
                                                                      << shape_to_string(wi.shape));
      idx = static_cast<const int64_t*>(wi.data);
      if (wi.host && !g.circular && g.len > 0) {
        const std::vector<int64_t> v = ops::tensor_to_int64s(*wi.host);
        for (int64_t b = 0; b < g.batch; ++b) {
          const int64_t first = v[static_cast<size_t>(b)], last = first + g.len - 1;
          const int64_t bad = first < 0 ? first : last;
          KILNRT_CHECK(first >= 0 && last < g.max_len, kInvalidArgument, name_,
                       "write position " << bad << " of batch " << b << " is outside the cache length " << g.max_len
                                         << " (mode linear)");
        }
      }
    } else {
      KILNRT_CHECK(g.circular || g.len <= g.max_len, kInvalidArgument, name_, "update longer than the cache");
    }
    expect_output(l.outputs.at(0), cs, name_);
    check_launch(gk::tensor_scatter(cache.data, update.data, idx, l.outputs[0].data, dtype_size(cache.dtype), g,
                                    l.stream),
                 name_, "tensor_scatter");
  }

 private:
  const ir::Node& node_;
  std::string name_, mode_;
  int64_t axis_;
};

// ---- support checks and registration -------------------------------------------------------------------------------
std::string float32_inputs(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> which) {
  for (size_t i : which) {
    if (i >= n.inputs.size() || n.inputs[i].empty()) continue;
    const DType d = value_dtype(g, n.inputs[i]);
    if (d != DType::kUndefined && d != DType::kFloat32)
      return "the CUDA " + n.op_type + " layer takes float32 (input " + std::to_string(i) + " is " + dtype_name(d) +
             ")";
  }
  return "";
}

std::string any_element_size(const ir::Node& n, const ir::Graph& g) {
  const DType d = value_dtype(g, n.inputs.at(0));
  if (d == DType::kUndefined) return "";
  const size_t s = dtype_size(d);
  return s == 1 || s == 2 || s == 4 || s == 8 ? "" : "elements of " + std::string(dtype_name(d)) + " are not moved";
}

template <typename L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    r.add({"LpPool", [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
           factory<LpPoolLayer>()});
    r.add({"CenterCropPad", any_element_size, factory<CenterCropPadLayer>()});
    r.add({"Col2Im", [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
           factory<Col2ImLayer>()});
    r.add({"AffineGrid", [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0}); },
           factory<AffineGridLayer>()});
    r.add({"DeformConv", [](const ir::Node& n, const ir::Graph& g) { return float32_inputs(n, g, {0, 1, 2, 3, 4}); },
           factory<DeformConvLayer>()});
    r.add({"TensorScatter",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
               const DType d = value_dtype(g, n.inputs[2]);
               if (d != DType::kUndefined && d != DType::kInt64) return "write_indices must be int64";
             }
             return any_element_size(n, g);
           },
           factory<TensorScatterLayer>()});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
