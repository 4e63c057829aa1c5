// CUDA layers that move data: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: no kernel, the output
// aliases the input), Transpose, Concat, Split, Slice, Expand (one strided-copy kernel) and Gather.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/layers_misc_gaps.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

void check_rank(size_t rank, const std::string& name) {
  KILNRT_CHECK(rank <= static_cast<size_t>(k::kMaxDims), kUnsupported, name,
               "rank " << rank << " exceeds the CUDA backend's limit of " << k::kMaxDims);
}

// ---- views -----------------------------------------------------------------------------------------------------
class AliasLayer final : public CudaLayer {
 public:
  explicit AliasLayer(const ir::Node& n, int64_t opset) {
    if (n.op_type == "Reshape" || n.op_type == "Unsqueeze" || n.op_type == "Squeeze") host_ = {1};
  }
  std::string tactic() const override { return "alias"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return host_; }
  bool is_alias() const override { return true; }
  void enqueue(LayerLaunch&) override {}

 private:
  std::vector<int> host_;
};

// ---- Transpose -------------------------------------------------------------------------------------------------
class TransposeLayer final : public CudaLayer {
 public:
  explicit TransposeLayer(const ir::Node& n) : name_(n.describe()) {
    if (n.has_attr("perm")) perm_ = n.attr_ints("perm");
  }
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& in = l.inputs[0].shape;
    check_rank(in.size(), name_);
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int64_t d = static_cast<int64_t>(in.size()) - 1; d >= 0; --d) perm.push_back(d);
    const auto in_st = contiguous_strides(in);
    const auto out_st = contiguous_strides(l.outputs[0].shape);
    k::Strided s;
    s.rank = static_cast<int>(in.size());
    for (int d = 0; d < s.rank; ++d) {
      s.dims[d] = in[perm[d]];
      s.in_strides[d] = in_st[perm[d]];
      s.out_strides[d] = out_st[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
  std::vector<int64_t> perm_;
};

// Copies `part` (contiguous, shape `ps`) into `whole` (contiguous, shape `ws`) at `offset` along `axis`, or the other
// way round (to_part) for Split.
void copy_block(const std::string& name, void* dst, const void* src, const Shape& ws, const Shape& ps, int axis,
                int64_t offset, bool to_part, size_t elem, StreamT stream) {
  check_rank(ws.size(), name);
  const auto w_st = contiguous_strides(ws), p_st = contiguous_strides(ps);
  k::Strided s;
  s.rank = static_cast<int>(ps.size());
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d] = ps[d];
    (to_part ? s.in_strides : s.out_strides)[d] = w_st[d];
    (to_part ? s.out_strides : s.in_strides)[d] = p_st[d];
  }
  (to_part ? s.in_offset : s.out_offset) = offset * w_st[axis];
  check_launch(k::strided_copy(dst, src, s, elem, stream), name, "strided_copy");
}

class ConcatLayer final : public CudaLayer {
 public:
  explicit ConcatLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ys = l.outputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis"), ys.size(), node_));
    int64_t offset = 0;
    for (const LayerTensor& in : l.inputs) {
      if (!in.present) continue;
      if (in.numel() > 0)
        copy_block(name_, l.outputs[0].data, in.data, ys, in.shape, axis, offset, false, dtype_size(in.dtype), l.stream);
      offset += in.shape[axis];
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

class SplitLayer final : public CudaLayer {
 public:
  explicit SplitLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t offset = 0;
    for (const LayerOutput& out : l.outputs) {
      if (!out.present) continue;  // omitted outputs still occupy their part: shapes come from inference
      if (out.numel() > 0)
        copy_block(name_, out.data, l.inputs[0].data, xs, out.shape, axis, offset, true, dtype_size(out.dtype),
                   l.stream);
      offset += out.shape[axis];
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

class SliceLayer final : public CudaLayer {
 public:
  SliceLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1, 2, 3, 4}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    check_rank(xs.size(), name_);
    const int rank = static_cast<int>(xs.size());
    std::vector<int64_t> starts, ends, axes, steps;
    auto host_ints = [&](size_t i) {
      return i < l.inputs.size() && l.inputs[i].present ? ops::tensor_to_int64s(*l.inputs[i].host) : std::vector<int64_t>{};
    };
    if (opset_ < 10) {
      starts = node_.attr_ints("starts");
      ends = node_.attr_ints("ends");
      axes = node_.attr_ints("axes", std::vector<int64_t>{});
    } else {
      starts = host_ints(1);
      ends = host_ints(2);
      axes = host_ints(3);
      steps = host_ints(4);
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> begin(rank, 0), step(rank, 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int a = static_cast<int>(ops::normalize_axis(axes[i], rank, node_));
      const int64_t dim = xs[a];
      int64_t s = starts[i];
      if (s < 0) s += dim;
      s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
      begin[a] = s;
      step[a] = steps[i];
    }
    const auto in_st = contiguous_strides(xs), out_st = contiguous_strides(l.outputs[0].shape);
    k::Strided st;
    st.rank = rank;
    for (int d = 0; d < rank; ++d) {
      st.dims[d] = l.outputs[0].shape[d];
      st.in_strides[d] = in_st[d] * step[d];
      st.out_strides[d] = out_st[d];
      st.in_offset += begin[d] * in_st[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, st, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

class ExpandLayer final : public CudaLayer {
 public:
  explicit ExpandLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ys = l.outputs[0].shape;
    check_rank(ys.size(), name_);
    const k::Broadcast3 bc = make_broadcast(ys, {ys, l.inputs[0].shape});
    const auto out_st = contiguous_strides(ys);
    const auto in_st = contiguous_strides(l.inputs[0].shape);
    k::Strided s;
    s.rank = static_cast<int>(ys.size());
    for (int d = 0; d < s.rank; ++d) {
      s.dims[d] = ys[d];
      s.out_strides[d] = out_st[d];
      s.in_strides[d] = bc.contiguous_same ? in_st[d] : bc.s1[d];
    }
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
};

class GatherLayer final : public CudaLayer {
 public:
  explicit GatherLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:gather"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
    check_launch(k::gather(l.inputs[0].data, static_cast<const int64_t*>(l.inputs[1].data), l.outputs[0].data, outer,
                           xs[axis], l.inputs[1].numel(), inner, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

std::string any_dtype(const ir::Node& n, const ir::Graph& g) {
  const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               if (dropout_has_mask(n)) return dropout_mask_supports(n, g);  // layers_misc_gaps.cc
               return "";
             },
             [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
               if (dropout_has_mask(a.node)) return make_dropout_mask(a);
               return std::make_unique<AliasLayer>(a.node, a.opset);
             }});
    r.add({"Transpose", any_dtype, factory<TransposeLayer>()});
    r.add({"Concat", any_dtype, factory<ConcatLayer>()});
    r.add({"Split", any_dtype, factory<SplitLayer>()});
    r.add({"Expand", any_dtype, factory<ExpandLayer>()});
    r.add({"Slice", any_dtype, [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<SliceLayer>(a.node, a.opset);
           }});
    r.add({"Gather",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (value_dtype(g, n.inputs.at(1)) != DType::kInt64) return "Gather indices must be int64";
             return any_dtype(n, g);
           },
           factory<GatherLayer>()});
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
