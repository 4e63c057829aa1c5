// CUDA layers for CPU parity (part 2): DepthToSpace / SpaceToDepth (one strided copy), EyeLike,
// InstanceNormalization / GroupNormalization (one group-norm kernel), LRN, ConvTranspose (1-D / 2-D / 3-D, own direct
// kernels: each output element gathers its contributions, no atomics; 3-D in kernels/pool3d_convt3d.cu),
// NegativeLogLikelihoodLoss /
// SoftmaxCrossEntropyLoss (log-softmax kernel + one NLL kernel), GridSample (4-D), CastLike. Kernels: kernels/extra.cu.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/extra_kernels.h"
#include "backends/cuda/kernels/pool3d_convt3d_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels::extra;

std::string float32_input(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  return t == DType::kFloat32 ? "" : std::string("dtype ") + dtype_name(t) + " (the CUDA layer takes float32)";
}

// ---- DepthToSpace / SpaceToDepth: a 6-D view of the input, permuted -------------------------------------------------
class DepthSpaceLayer final : public CudaLayer {
 public:
  explicit DepthSpaceLayer(const ir::Node& n)
      : name_(n.describe()), to_space_(n.op_type == "DepthToSpace"), bs_(n.attr_int("blocksize")),
        crd_(n.attr_string("mode", std::string("DCR")) == "CRD") {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() == 4 && bs_ > 0, kInvalidArgument, name_, "needs a 4-D input and blocksize > 0");
    const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], b = bs_;
    int64_t view[6];
    int perm[6];
    if (to_space_) {
      const int64_t oc = c / (b * b);
      if (crd_) {  // [n, oc, b, b, h, w] -> [n, oc, h, b, w, b]
        const int64_t v[6] = {n, oc, b, b, h, w};
        const int p[6] = {0, 1, 4, 2, 5, 3};
        std::copy(v, v + 6, view);
        std::copy(p, p + 6, perm);
      } else {  // DCR: [n, b, b, oc, h, w] -> [n, oc, h, b, w, b]
        const int64_t v[6] = {n, b, b, oc, h, w};
        const int p[6] = {0, 3, 4, 1, 5, 2};
        std::copy(v, v + 6, view);
        std::copy(p, p + 6, perm);
      }
    } else {  // DCR: [n, c, h/b, b, w/b, b] -> [n, b, b, c, h/b, w/b]; CRD (opset 24 mode): -> [n, c, b, b, h/b, w/b]
      const int64_t v[6] = {n, c, h / b, b, w / b, b};
      const int dcr[6] = {0, 3, 5, 1, 2, 4}, crd[6] = {0, 1, 3, 5, 2, 4};
      const int* p = crd_ ? crd : dcr;
      std::copy(v, v + 6, view);
      std::copy(p, p + 6, perm);
    }
    int64_t in_st[6], out_dims[6], out_st[6];
    in_st[5] = 1;
    for (int d = 4; d >= 0; --d) in_st[d] = in_st[d + 1] * view[d + 1];
    for (int d = 0; d < 6; ++d) out_dims[d] = view[perm[d]];
    out_st[5] = 1;
    for (int d = 4; d >= 0; --d) out_st[d] = out_st[d + 1] * out_dims[d + 1];
    k::Strided s;
    s.rank = 6;
    for (int d = 0; d < 6; ++d) {
      s.dims[d] = out_dims[d];
      s.in_strides[d] = in_st[perm[d]];
      s.out_strides[d] = out_st[d];
    }
    if (l.outputs[0].numel() == 0) return;
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
  bool to_space_;
  int64_t bs_;
  bool crd_;
};

// ---- EyeLike -----------------------------------------------------------------------------------------------------
uint64_t one_bits(DType t) {
  switch (t) {
    case DType::kFloat32: return 0x3f800000ULL;
    case DType::kFloat64: return 0x3ff0000000000000ULL;
    case DType::kFloat16: return 0x3c00ULL;
    case DType::kBFloat16: return 0x3f80ULL;
    default: return 1;  // integers and bool
  }
}

class EyeLikeLayer final : public CudaLayer {
 public:
  explicit EyeLikeLayer(const ir::Node& n) : name_(n.describe()), k_(n.attr_int("k", 0)) {}
  std::string tactic() const override { return "kernel:eye"; }
  void enqueue(LayerLaunch& l) override {
    const LayerOutput& y = l.outputs[0];
    KILNRT_CHECK(y.shape.size() == 2, kInvalidArgument, name_, "EyeLike needs a 2-D input");
    check_launch(x::eye_like(y.data, y.shape[0], y.shape[1], k_, one_bits(y.dtype), dtype_size(y.dtype), l.stream),
                 name_, "eye_like");
  }

 private:
  std::string name_;
  int64_t k_;
};

// ---- Instance / Group normalisation, LRN ----------------------------------------------------------------------------
class GroupNormLayer final : public CudaLayer {
 public:
  explicit GroupNormLayer(const ir::Node& n)
      : name_(n.describe()), instance_(n.op_type == "InstanceNormalization"),
        groups_(instance_ ? 0 : n.attr_int("num_groups")), eps_(n.attr_float("epsilon", 1e-5f)) {}
  std::string tactic() const override { return "kernel:group-norm"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "input needs rank >= 2");
    const int64_t n = xs[0], c = xs[1];
    int64_t spatial = 1;
    for (size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
    const int64_t groups = instance_ ? c : groups_;
    KILNRT_CHECK(groups > 0 && c % groups == 0, kInvalidArgument, name_,
                 "num_groups " << groups << " does not divide the " << c << " channels");
    const bool has_scale = l.inputs.size() > 1 && l.inputs[1].present;
    const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
    // GroupNormalization-18 takes per-group scale/bias, -21 per-channel ones: told apart by their size.
    const bool per_channel = instance_ || (has_scale ? l.inputs[1].numel() == c : true);
    check_launch(x::group_norm_f32(static_cast<const float*>(l.inputs[0].data),
                                   has_scale ? static_cast<const float*>(l.inputs[1].data) : nullptr,
                                   has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                                   static_cast<float*>(l.outputs[0].data), n, c, spatial, groups, per_channel, eps_,
                                   l.stream),
                 name_, "group_norm");
  }

 private:
  std::string name_;
  bool instance_;
  int64_t groups_;
  float eps_;
};

class LrnLayer final : public CudaLayer {
 public:
  explicit LrnLayer(const ir::Node& n)
      : name_(n.describe()), size_(static_cast<int>(n.attr_int("size"))), alpha_(n.attr_float("alpha", 1e-4f)),
        beta_(n.attr_float("beta", 0.75f)), bias_(n.attr_float("bias", 1.0f)) {}
  std::string tactic() const override { return "kernel:lrn"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2 && size_ > 0, kInvalidArgument, name_, "LRN needs rank >= 2 and size > 0");
    int64_t spatial = 1;
    for (size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
    check_launch(x::lrn_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data),
                            xs[0], xs[1], spatial, size_, alpha_, beta_, bias_, l.stream),
                 name_, "lrn");
  }

 private:
  std::string name_;
  int size_;
  float alpha_, beta_, bias_;
};

// ---- ConvTranspose (1-D / 2-D / 3-D) -----------------------------------------------------------------------------
int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

class ConvTransposeLayer final : public CudaLayer {
 public:
  explicit ConvTransposeLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:conv-transpose2d-direct"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    const Shape& ys = l.outputs[0].shape;
    KILNRT_CHECK(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size() && ys.size() == xs.size(), kUnsupported,
                 name_, "the CUDA ConvTranspose takes 1-D to 3-D inputs");
    const int nd = static_cast<int>(xs.size()) - 2;
    const auto st = node_.attr_ints("strides", std::vector<int64_t>(nd, 1));
    const auto dil = node_.attr_ints("dilations", std::vector<int64_t>(nd, 1));
    const auto opad = node_.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
    std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    const std::string auto_pad = node_.attr_string("auto_pad", std::string("NOTSET"));
    const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    KILNRT_CHECK(st.size() == static_cast<size_t>(nd) && dil.size() == static_cast<size_t>(nd) &&
                     opad.size() == static_cast<size_t>(nd) && pads.size() == static_cast<size_t>(2 * nd),
                 kInvalidModel, name_, "strides / dilations / output_padding / pads sizes");
    std::vector<int64_t> begin(nd);
    for (int i = 0; i < nd; ++i) {
      const int64_t in = xs[2 + i], kern = ws[2 + i], out = ys[2 + i];
      if (node_.has_attr("output_shape") || same) {
        // The output size is known (inference applied output_shape / SAME): the pads follow from it.
        const int64_t total = st[i] * (in - 1) + opad[i] + (kern - 1) * dil[i] + 1 - out;
        begin[i] = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
      } else {
        begin[i] = auto_pad == "VALID" ? 0 : pads[i];
      }
    }
    const int64_t group = node_.attr_int("group", 1);
    const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
    if (nd == 3) {  // kernels/pool3d_convt3d.cu
      kilnrt::cuda::kernels::vol::ConvT3 q;
      q.n = xs[0];
      q.c = xs[1];
      q.k = ys[1];
      q.groups = group;
      KILNRT_CHECK(group > 0 && q.c % group == 0 && q.k % group == 0 && ws[0] == q.c && ws[1] * group == q.k,
                   kInvalidArgument, name_, "channels / group / weight shape mismatch");
      for (int i = 0; i < 3; ++i) {
        q.in[i] = xs[2 + i];
        q.out[i] = ys[2 + i];
        q.kern[i] = ws[2 + i];
        q.s[i] = st[i];
        q.d[i] = dil[i];
        q.pad_begin[i] = begin[i];
      }
      check_launch(kilnrt::cuda::kernels::vol::conv_transpose3d_f32(
                       static_cast<const float*>(l.inputs[0].data), static_cast<const float*>(l.inputs[1].data),
                       has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                       static_cast<float*>(l.outputs[0].data), q, l.stream),
                   name_, "conv_transpose3d");
      return;
    }
    x::ConvT2d p;
    p.n = xs[0];
    p.c = xs[1];
    p.k = ys[1];
    p.groups = static_cast<int>(group);
    KILNRT_CHECK(group > 0 && p.c % group == 0 && p.k % group == 0 && ws[0] == p.c && ws[1] * group == p.k,
                 kInvalidArgument, name_, "channels / group / weight shape mismatch");
    if (nd == 1) {
      p.h = p.oh = 1;
      p.w = xs[2];
      p.ow = ys[2];
      p.kw = static_cast<int>(ws[2]);
      p.sw = static_cast<int>(st[0]);
      p.dw = static_cast<int>(dil[0]);
      p.pw = static_cast<int>(begin[0]);
    } else {
      p.h = xs[2];
      p.w = xs[3];
      p.oh = ys[2];
      p.ow = ys[3];
      p.kh = static_cast<int>(ws[2]);
      p.kw = static_cast<int>(ws[3]);
      p.sh = static_cast<int>(st[0]);
      p.sw = static_cast<int>(st[1]);
      p.dh = static_cast<int>(dil[0]);
      p.dw = static_cast<int>(dil[1]);
      p.ph = static_cast<int>(begin[0]);
      p.pw = static_cast<int>(begin[1]);
    }
    check_launch(x::conv_transpose2d_f32(static_cast<const float*>(l.inputs[0].data),
                                         static_cast<const float*>(l.inputs[1].data),
                                         has_bias ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                                         static_cast<float*>(l.outputs[0].data), p, l.stream),
                 name_, "conv_transpose2d");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

// ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss --------------------------------------------------------
class LossLayer final : public CudaLayer {
 public:
  explicit LossLayer(const ir::Node& n)
      : name_(n.describe()), softmax_(n.op_type == "SoftmaxCrossEntropyLoss"),
        has_ignore_(n.has_attr("ignore_index")), ignore_(n.attr_int("ignore_index", 0)) {
    const std::string r = n.attr_string("reduction", std::string("mean"));
    reduction_ = r == "none" ? 0 : r == "sum" ? 1 : 2;
  }
  std::string tactic() const override { return softmax_ ? "kernel:log-softmax+nll" : "kernel:nll"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& xin = l.inputs[0];
    const Shape& xs = xin.shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "input needs rank >= 2 (N, C, ...)");
    const int64_t n = xs[0], c = xs[1];
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    const float* logp = static_cast<const float*>(xin.data);
    if (softmax_) {
      void* buf = l.outputs.size() > 1 && l.outputs[1].present ? l.outputs[1].data : nullptr;
      if (!buf) {
        KILNRT_CHECK(static_cast<size_t>(xin.numel()) * sizeof(float) <= l.workspace_bytes, kUnsupported, name_,
                     "log-probabilities of " << xin.numel() << " elements exceed the CUDA workspace");
        buf = l.workspace;
      }
      if (xin.numel() > 0)
        check_launch(k::softmax_f32(logp, static_cast<float*>(buf), n, c, inner, true, l.stream), name_, "softmax");
      logp = static_cast<const float*>(buf);
    }
    const bool has_w = l.inputs.size() > 2 && l.inputs[2].present;
    check_launch(x::nll_loss_f32(logp, l.inputs[1].data, l.inputs[1].dtype == DType::kInt64,
                                 has_w ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                                 static_cast<float*>(l.outputs[0].data), n, c, inner, has_ignore_, ignore_, reduction_,
                                 l.stream),
                 name_, "nll_loss");
  }

 private:
  std::string name_;
  bool softmax_, has_ignore_;
  int64_t ignore_;
  int reduction_ = 2;
};

// ---- GridSample (4-D) / CastLike ------------------------------------------------------------------------------------
int grid_mode(const ir::Node& n) {
  const std::string m = n.attr_string("mode", std::string("bilinear"));
  return m == "nearest" ? 1 : (m == "bicubic" || m == "cubic") ? 2 : (m == "bilinear" || m == "linear") ? 0 : -1;
}
int grid_pad(const ir::Node& n) {
  const std::string p = n.attr_string("padding_mode", std::string("zeros"));
  return p == "zeros" ? 0 : p == "border" ? 1 : p == "reflection" ? 2 : -1;
}

class GridSampleLayer final : public CudaLayer {
 public:
  explicit GridSampleLayer(const ir::Node& n)
      : name_(n.describe()), mode_(grid_mode(n)), pad_(grid_pad(n)), align_(n.attr_int("align_corners", 0) != 0) {}
  std::string tactic() const override { return "kernel:grid-sample"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const Shape& gs = l.inputs[1].shape;
    KILNRT_CHECK(xs.size() == 4 && gs.size() == 4 && gs[3] == 2 && gs[0] == xs[0], kUnsupported, name_,
                 "GridSample supports 4-D X [N, C, H, W] and grid [N, Ho, Wo, 2]");
    check_launch(x::grid_sample_f32(static_cast<const float*>(l.inputs[0].data),
                                    static_cast<const float*>(l.inputs[1].data), static_cast<float*>(l.outputs[0].data),
                                    xs[0], xs[1], xs[2], xs[3], gs[1], gs[2], mode_, pad_, align_, l.stream),
                 name_, "grid_sample");
  }

 private:
  std::string name_;
  int mode_, pad_;
  bool align_;
};

class CastLikeLayer final : public CudaLayer {
 public:
  explicit CastLikeLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:cast"; }
  void enqueue(LayerLaunch& l) override {
    const int from = cast_dtype_code(l.inputs[0].dtype), to = cast_dtype_code(l.outputs[0].dtype);
    KILNRT_CHECK(from >= 0 && to >= 0, kUnsupported, name_,
                 "CastLike " << dtype_name(l.inputs[0].dtype) << " -> " << dtype_name(l.outputs[0].dtype));
    check_launch(k::cast(l.inputs[0].data, from, l.outputs[0].data, to, l.outputs[0].numel(), l.stream), name_,
                 "cast");
  }

 private:
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    for (const char* op : {"DepthToSpace", "SpaceToDepth"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
               return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
             },
             factory<DepthSpaceLayer>()});
    r.add({"EyeLike",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             const DType t = n.has_attr("dtype") ? static_cast<DType>(n.attr_int("dtype")) : value_dtype(g, n.inputs.at(0));
             const size_t sz = dtype_size(t);
             return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
           },
           factory<EyeLikeLayer>()});
    for (const char* op : {"InstanceNormalization", "GroupNormalization"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               for (size_t i = 0; i < n.inputs.size(); ++i)
                 if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
                   return "the CUDA layer takes float32";
               return "";
             },
             factory<GroupNormLayer>()});
    r.add({"LRN", float32_input, factory<LrnLayer>()});
    r.add({"GridSample",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (grid_mode(n) < 0 || grid_pad(n) < 0) return "GridSample mode / padding_mode";
             if (value_dtype(g, n.inputs.at(1)) != DType::kFloat32) return "the CUDA layer takes a float32 grid";
             return float32_input(n, g);
           },
           factory<GridSampleLayer>()});
    r.add({"CastLike",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             // An unknown dtype (a value computed on the host, such as an If's output in an expanded function
             // body) is checked at run time, where the layer gets the concrete dtypes.
             for (size_t i = 0; i < 2; ++i) {
               const DType t = value_dtype(g, n.inputs.at(i));
               if (t != DType::kUndefined && cast_dtype_code(t) < 0) return "unsupported cast dtypes";
             }
             return "";
           },
           factory<CastLikeLayer>()});
    for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA layer takes float32";
               const DType t = value_dtype(g, n.inputs.at(1));
               if (t != DType::kInt64 && t != DType::kInt32) return "targets must be int64 or int32";
               if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != DType::kFloat32)
                 return "weights must be float32";
               return "";
             },
             factory<LossLayer>()});
    r.add({"ConvTranspose",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             for (size_t i = 0; i < n.inputs.size(); ++i)
               if (!n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
                 return "the CUDA layer takes float32";
             const ir::TensorType* t = g.type_of(n.inputs.at(0));
             if (t && t->has_shape && (t->shape.size() < 3 || t->shape.size() > 5))
               return "the CUDA ConvTranspose takes 1-D to 3-D inputs";
             return "";
           },
           factory<ConvTransposeLayer>()});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
