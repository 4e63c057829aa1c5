// CUDA layers for CPU parity (part 3): Einsum (direct loop kernel, up to 3 inputs, ellipsis and diagonals),
// Pad (constant / reflect / edge / wrap; pads, constant and axes read on the host: they must be constants or shape
// computations) and Tile (repeats on the host), both on one pad kernel; Resize / Upsample (float32, nearest / linear /
// cubic, every coordinate mode, scales / sizes / roi on the host). Kernels: kernels/extra.cu.
#include <algorithm>
#include <cstring>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/bits.h"
#include "backends/cuda/kernels/extra_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels::extra;

// ---- Einsum ----------------------------------------------------------------------------------------------------------
constexpr int kEllipsisLabel = 1000;  // ellipsis dims get labels 1000 + j (right-aligned)

class EinsumLayer final : public CudaLayer {
 public:
  explicit EinsumLayer(const ir::Node& n) : name_(n.describe()) {
    for (char c : n.attr_string("equation"))
      if (c != ' ') eq_ += c;
  }
  std::string tactic() const override { return "kernel:einsum-direct"; }
  void enqueue(LayerLaunch& l) override {
    const size_t arrow = eq_.find("->");
    const std::string lhs = eq_.substr(0, arrow);
    std::vector<std::string> terms(1);
    for (char c : lhs) {
      if (c == ',') terms.emplace_back();
      else terms.back() += c;
    }
    const int n_in = static_cast<int>(l.inputs.size());
    KILNRT_CHECK(static_cast<int>(terms.size()) == n_in && n_in >= 1 && n_in <= x::kEinsumInputs, kUnsupported, name_,
                 "Einsum '" << eq_ << "' with " << n_in << " inputs (the CUDA layer takes 1 to " << x::kEinsumInputs
                            << ")");
    // Ellipsis ranks first (they align right across inputs).
    int ell = 0;
    std::vector<int> ell_rank(n_in, 0);
    for (int i = 0; i < n_in; ++i) {
      const size_t dots = terms[i].find("...");
      const int letters = static_cast<int>(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
      ell_rank[i] = dots == std::string::npos ? 0 : static_cast<int>(l.inputs[i].shape.size()) - letters;
      KILNRT_CHECK(ell_rank[i] >= 0 && (dots != std::string::npos ||
                                        letters == static_cast<int>(l.inputs[i].shape.size())),
                   kInvalidArgument, name_, "term '" << terms[i] << "' does not match input " << i << "'s rank");
      ell = std::max(ell, ell_rank[i]);
    }
    auto labels_of = [&](const std::string& t, int erank) {
      std::vector<int> out;
      for (size_t c = 0; c < t.size(); ++c) {
        if (t.compare(c, 3, "...") == 0) {
          for (int j = 0; j < erank; ++j) out.push_back(kEllipsisLabel + (ell - erank) + j);
          c += 2;
        } else {
          out.push_back(static_cast<unsigned char>(t[c]));
        }
      }
      return out;
    };
    std::vector<std::vector<int>> in_labels(n_in);
    std::map<int, int64_t> dim;
    std::map<int, int> count;
    for (int i = 0; i < n_in; ++i) {
      in_labels[i] = labels_of(terms[i], ell_rank[i]);
      for (size_t a = 0; a < in_labels[i].size(); ++a) {
        const int64_t d = l.inputs[i].shape[a];
        int64_t& cur = dim.emplace(in_labels[i][a], d).first->second;
        if (cur == 1) cur = d;
        ++count[in_labels[i][a]];
      }
    }
    std::vector<int> out_labels;
    if (arrow != std::string::npos) {
      out_labels = labels_of(eq_.substr(arrow + 2), ell);
    } else {
      for (int j = 0; j < ell; ++j) out_labels.push_back(kEllipsisLabel + j);
      for (const auto& [lab, c] : count)
        if (lab < kEllipsisLabel && c == 1) out_labels.push_back(lab);
    }
    std::vector<int> sum_labels;
    for (const auto& [lab, d] : dim)
      if (std::find(out_labels.begin(), out_labels.end(), lab) == out_labels.end()) sum_labels.push_back(lab);
    KILNRT_CHECK(out_labels.size() <= static_cast<size_t>(k::kMaxDims) &&
                     sum_labels.size() <= static_cast<size_t>(k::kMaxDims),
                 kUnsupported, name_, "Einsum '" << eq_ << "' has too many labels for the CUDA layer");
    x::EinsumPlan p;
    p.n_inputs = n_in;
    p.out_rank = static_cast<int>(out_labels.size());
    p.sum_rank = static_cast<int>(sum_labels.size());
    for (int d = 0; d < p.out_rank; ++d) {
      KILNRT_CHECK(dim.count(out_labels[d]), kInvalidArgument, name_, "output label not in any input");
      p.out_dims[d] = dim[out_labels[d]];
    }
    for (int d = 0; d < p.sum_rank; ++d) p.sum_dims[d] = dim[sum_labels[d]];
    const void* ptrs[x::kEinsumInputs] = {};
    for (int i = 0; i < n_in; ++i) {
      ptrs[i] = l.inputs[i].data;
      const Shape& s = l.inputs[i].shape;
      int64_t stride = 1;
      for (int a = static_cast<int>(s.size()) - 1; a >= 0; --a) {
        const int lab = in_labels[i][a];
        const int64_t st = (s[a] == 1 && dim[lab] != 1) ? 0 : stride;
        const auto o = std::find(out_labels.begin(), out_labels.end(), lab);
        if (o != out_labels.end()) p.out_strides[i][o - out_labels.begin()] += st;
        else p.sum_strides[i][std::find(sum_labels.begin(), sum_labels.end(), lab) - sum_labels.begin()] += st;
        stride *= s[a];
      }
    }
    const int code = l.outputs[0].dtype == DType::kFloat64 ? 6 : 0;
    check_launch(x::einsum(ptrs, l.outputs[0].data, p, code, l.stream), name_, "einsum");
  }

 private:
  std::string name_;
  std::string eq_;
};

// ---- Pad / Tile ------------------------------------------------------------------------------------------------------
std::vector<int64_t> host_ints(const LayerLaunch& l, size_t i) {
  return i < l.inputs.size() && l.inputs[i].present && l.inputs[i].host ? ops::tensor_to_int64s(*l.inputs[i].host)
                                                                         : std::vector<int64_t>{};
}

x::PadPlan plan_for(const Shape& in, const Shape& out, const std::string& name) {
  KILNRT_CHECK(in.size() <= static_cast<size_t>(k::kMaxDims) && in.size() == out.size(), kUnsupported, name,
               "rank " << in.size() << " (the CUDA layer takes up to " << k::kMaxDims << ")");
  x::PadPlan p;
  p.rank = static_cast<int>(in.size());
  for (int d = 0; d < p.rank; ++d) {
    p.in_dims[d] = in[d];
    p.out_dims[d] = out[d];
  }
  return p;
}

class PadLayer final : public CudaLayer {
 public:
  explicit PadLayer(const ir::Node& n) : node_(n), name_(n.describe()) {
    const std::string m = n.attr_string("mode", std::string("constant"));
    mode_ = m == "reflect" ? 1 : m == "edge" ? 2 : m == "wrap" ? 3 : 0;
  }
  std::string tactic() const override { return "kernel:pad"; }
  std::vector<int> host_inputs() const override { return {1, 2, 3}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& xin = l.inputs[0];
    const Shape& xs = xin.shape;
    const int rank = static_cast<int>(xs.size());
    x::PadPlan p = plan_for(xs, l.outputs[0].shape, name_);
    p.mode = mode_;
    std::vector<int64_t> pads = node_.has_attr("pads") ? node_.attr_ints("pads") : host_ints(l, 1);
    std::vector<int64_t> axes = host_ints(l, 3);
    if (axes.empty())
      for (int d = 0; d < rank; ++d) axes.push_back(d);
    KILNRT_CHECK(pads.size() == 2 * axes.size(), kInvalidModel, name_,
                 "Pad: " << pads.size() << " pads for " << axes.size() << " axes");
    for (size_t i = 0; i < axes.size(); ++i) p.begin[ops::normalize_axis(axes[i], rank, node_)] = pads[i];
    if (mode_ != 0)
      for (int d = 0; d < rank; ++d)
        KILNRT_CHECK(xs[d] > 0 || p.out_dims[d] == 0, kInvalidArgument, name_,
                     "Pad: cannot pad an empty dim " << d << " in a non-constant mode");
    const size_t es = dtype_size(xin.dtype);
    if (mode_ == 0) {
      if (node_.has_attr("value")) {
        const float v = node_.attr_float("value");
        if (xin.dtype == DType::kFloat32) std::memcpy(&p.value_bits, &v, 4);
        else if (xin.dtype == DType::kFloat64) { const double dv = v; std::memcpy(&p.value_bits, &dv, 8); }
        else p.value_bits = static_cast<uint64_t>(static_cast<int64_t>(v));
      } else if (l.inputs.size() > 2 && l.inputs[2].present && l.inputs[2].host) {
        const Tensor& c = *l.inputs[2].host;
        KILNRT_CHECK(c.dtype() == xin.dtype && c.numel() == 1, kInvalidModel, name_,
                     "Pad: constant_value must be one element of the input's dtype");
        std::memcpy(&p.value_bits, c.raw(), es);
      }
    }
    check_launch(x::pad(xin.data, l.outputs[0].data, p, es, l.stream), name_, "pad");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int mode_ = 0;
};

class TileLayer final : public CudaLayer {
 public:
  explicit TileLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:pad"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    x::PadPlan p = plan_for(l.inputs[0].shape, l.outputs[0].shape, name_);
    p.mode = 3;  // wrap from begin 0: y[o] = x[o % in]
    check_launch(x::pad(l.inputs[0].data, l.outputs[0].data, p, dtype_size(l.inputs[0].dtype), l.stream), name_,
                 "pad");
  }

 private:
  std::string name_;
};

// ---- Resize / Upsample (float32; scales / sizes / roi read on the host) ----------------------------------------------
std::vector<double> host_doubles(const Tensor& t, const std::string& name) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kFloat32) v[i] = t.data<float>()[i];
    else if (t.dtype() == DType::kFloat64) v[i] = t.data<double>()[i];
    else KILNRT_THROW(kUnsupported, name, "Resize: scales / roi of dtype " << dtype_name(t.dtype()));
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
                             {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                              "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"});
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
    x::ResizePlan p = plan_;
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
          p.ax[axes[i]].scale = in[axes[i]] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]) : 1.0;
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
    if (antialias_) {  // linear / cubic, antialias=1: kernels/bits_resize.cu
      check_launch(kilnrt::cuda::kernels::bits::resize_antialias_f32(static_cast<const float*>(l.inputs[0].data),
                                                                     static_cast<float*>(l.outputs[0].data), p, l.stream),
                   name_, "resize_antialias");
      return;
    }
    check_launch(x::resize_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), p,
                               l.stream),
                 name_, "resize");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
  bool legacy_ = false;
  bool antialias_ = false;
  x::ResizePlan plan_;
  std::string keep_ = "stretch";
  std::vector<int64_t> axes_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

std::string sized(const ir::Node& n, const ir::Graph& g) {
  const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    r.add({"Einsum",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (n.inputs.empty() || n.inputs.size() > static_cast<size_t>(x::kEinsumInputs))
               return "the CUDA Einsum takes 1 to 3 inputs";
             const DType t = value_dtype(g, n.inputs[0]);
             if (t != DType::kFloat32 && t != DType::kFloat64) return "the CUDA Einsum takes float32 / float64";
             for (const std::string& in : n.inputs)
               if (value_dtype(g, in) != t) return "mixed input dtypes";
             return "";
           },
           factory<EinsumLayer>()});
    r.add({"Pad",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             const std::string m = n.attr_string("mode", std::string("constant"));
             if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap") return "Pad mode " + m;
             return sized(n, g);
           },
           factory<PadLayer>()});
    r.add({"Tile", sized, factory<TileLayer>()});
    for (const char* op : {"Resize", "Upsample"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA Resize takes float32";
               std::string mode = n.attr_string("mode", std::string("nearest"));
               if (n.attr_int("antialias", 0) != 0 && mode != "linear" && mode != "cubic")  // kernels/bits_resize.cu
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
             }});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
